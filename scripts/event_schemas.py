"""Writes the JSON Schema of each notification event type to docs/events/<type>.schema.json,
from vigil.notifications.events. Usage: PYTHONPATH=src .venv/bin/python scripts/event_schemas.py

tests/unit/test_notifications_events.py fails while a committed schema differs from the code's.
"""

from __future__ import annotations

import json
from pathlib import Path

from vigil.notifications.events import event_schemas

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "events"


def rendered(schema: dict[str, object]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for event_type, schema in event_schemas().items():
        path = FOLDER / f"{event_type}.schema.json"
        path.write_text(rendered(schema), encoding="utf-8")
        print(path.relative_to(FOLDER.parents[1]))


if __name__ == "__main__":
    main()
