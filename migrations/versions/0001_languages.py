"""languages and per-class membership

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "languages",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("alphabet", sa.JSON(), nullable=False),
        sa.Column("alphabet_size", sa.Integer(), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("dfa", sa.JSON(), nullable=False),
        sa.Column("num_states", sa.Integer(), nullable=False),
        sa.Column("analysis", sa.JSON(), nullable=False),
        sa.Column("code_version", sa.String(100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_languages_alphabet_size", "languages", ["alphabet_size"])
    op.create_index("ix_languages_num_states", "languages", ["num_states"])
    op.create_index("ix_languages_created_at_id", "languages", ["created_at", "id"])
    op.create_table(
        "language_classes",
        sa.Column(
            "language_id",
            sa.String(64),
            sa.ForeignKey("languages.id", ondelete="CASCADE", name="fk_language_classes_language_id"),
            primary_key=True,
        ),
        sa.Column("class_key", sa.String(64), primary_key=True),
        sa.Column("member", sa.Boolean(), nullable=True),
    )
    op.create_index("ix_language_classes_key_member", "language_classes", ["class_key", "member"])


def downgrade() -> None:
    op.drop_index("ix_language_classes_key_member", table_name="language_classes")
    op.drop_table("language_classes")
    op.drop_index("ix_languages_created_at_id", table_name="languages")
    op.drop_index("ix_languages_num_states", table_name="languages")
    op.drop_index("ix_languages_alphabet_size", table_name="languages")
    op.drop_table("languages")
