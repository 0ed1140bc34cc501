"""jobs.language_id nullable: a sweep job (kind ``sweep``) trains a sample of census languages, not one stored language

The foreign key ``fk_jobs_language_id`` (``ON DELETE CASCADE``) and the indexes stay; only the NOT
NULL goes. ``op.batch_alter_table`` copies the table on SQLite (which cannot alter a column) and is a
plain ``ALTER TABLE … ALTER COLUMN`` on PostgreSQL. The downgrade deletes the jobs without a
language (sweeps: they cannot exist under the old schema) and makes the column NOT NULL again.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("language_id", existing_type=sa.String(64), nullable=True)


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM jobs WHERE language_id IS NULL"))
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("language_id", existing_type=sa.String(64), nullable=False)
