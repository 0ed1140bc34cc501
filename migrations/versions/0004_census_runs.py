"""census_runs, census_profiles: stored census runs and their counts per membership profile and state number

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "census_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("max_states", sa.Integer(), nullable=False),
        sa.Column("alphabet_size", sa.Integer(), nullable=False),
        sa.Column("class_keys", sa.JSON(), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("by_states", sa.JSON(), nullable=False),
        sa.Column("published", sa.JSON(), nullable=False),
        sa.Column("matches_published", sa.Boolean(), nullable=True),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("executor", sa.String(16), nullable=False),
        sa.Column("jobs", sa.Integer(), nullable=False),
        sa.Column("code_version", sa.String(100), nullable=False),
        sa.Column("data_path", sa.String(1000), nullable=False),
        sa.Column("data_sha256", sa.String(64), nullable=False),
        sa.Column("data_bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_census_runs_created_at_id", "census_runs", ["created_at", "id"])
    op.create_table(
        "census_profiles",
        sa.Column("run_id", sa.String(36), sa.ForeignKey("census_runs.id", ondelete="CASCADE",
                                                         name="fk_census_profiles_run_id"), primary_key=True),
        sa.Column("profile", sa.String(200), primary_key=True),
        sa.Column("states", sa.Integer(), primary_key=True),
        sa.Column("count", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("census_profiles")
    op.drop_index("ix_census_runs_created_at_id", table_name="census_runs")
    op.drop_table("census_runs")
