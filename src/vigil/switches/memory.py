"""Dead-man switches and deaths in memory."""

from __future__ import annotations

import json
from datetime import datetime

from vigil.kit.limits import item_bytes
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed, Write
from vigil.quotas.store import quota_count
from vigil.switches.records import Beat, Death, Pause, ReleasedPage, Switch, with_beat
from vigil.switches.store import ArmedAlarm, ArmedPage, SwitchStore, sweep_shard


class MemorySwitches(MemoryBase, SwitchStore):
    def __init__(self) -> None:
        self.switches: dict[tuple[str, str], Switch] = {}
        self.deaths: dict[tuple[str, str, int], Death] = {}
        self.released_pages: dict[tuple[str, str, int, int], ReleasedPage] = {}
        # The namespace-wide indexes, as on DynamoDB: a switch's scope, written when the
        # switch is first stored; a death's position and its key, written when it is created.
        # (Dicts, like every other table of the fake, which the harness snapshots.)
        self.switch_index: dict[tuple[str, str], str] = {}
        self.death_index: dict[tuple[str, str], tuple[str, int]] = {}
        # A namespace's pauses, one per prefix, as in its pause partition on DynamoDB.
        self.pause_rows: dict[tuple[str, str], Pause] = {}
        # (namespace, parent scope, dependant scope): the switches that depend on another.
        self.dependant_rows: dict[tuple[str, str, str], bool] = {}
        super().__init__()

    def get_switch(self, namespace: str, scope: str) -> Switch | None:
        with self._lock:
            found = self.switches.get((namespace, scope))
            return found.model_copy(deep=True) if found else None

    def get_switches(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Switch]:
        with self._lock:
            return {k: self.switches[k].model_copy(deep=True) for k in keys if k in self.switches}

    def beat_switch(self, namespace: str, scope: str, holder: str, beat: Beat) -> Switch | None:
        with self._lock:
            current = self.switches.get((namespace, scope))
            if (
                current is None
                or current.state != "armed"
                or current.holder != holder
                or beat.notify_address not in (None, current.notify_address)
                or beat.depends_on not in (None, current.depends_on)
                or current.deadline <= beat.at
                or current.alarm_due > beat.deadline
                or beat.ran_short(current)
                or (beat.phase == "start" and current.run_started_at == current.last_beat_at)
            ):
                return None
            beaten = current.changed(
                **beat.changes(), beats=current.beats + 1, recent=with_beat(current.recent, beat.at)
            )
            self.switches[(namespace, scope)] = beaten
            return beaten.model_copy(deep=True)

    def save_switch(self, switch: Switch, expected_version: int | None) -> MemoryWrite:
        key = (switch.namespace, switch.scope)
        saved = self._versioned(self.switches, key, switch, expected_version, deep=True)
        if expected_version is not None:
            return saved

        def check() -> None:
            saved.check()
            if key in self.switch_index:
                raise ConditionFailed(switch.scope)

        def apply() -> None:
            saved.apply()
            self.switch_index[key] = switch.scope

        return MemoryWrite(check, apply, (*saved.sizes, item_bytes(key)))

    def list_switches(
        self, namespace: str, prefix: str, after: str | None, limit: int
    ) -> list[Switch]:
        with self._lock:
            scopes = sorted(
                scope
                for ns, scope in self.switch_index
                if ns == namespace and scope.startswith(prefix) and (after is None or scope > after)
            )[:limit]
            return [self.switches[(namespace, s)].model_copy(deep=True) for s in scopes]

    def armed_alarms(self, shard: int, after: str | None, limit: int) -> ArmedPage:
        # The sweep index, as on DynamoDB: every armed switch, in its shard, in key order.
        start = tuple(json.loads(after)) if after is not None else None
        with self._lock:
            armed = sorted(
                key
                for key, switch in self.switches.items()
                if switch.state == "armed"
                and sweep_shard(*key) == shard
                and (start is None or key > start)
            )
            page = armed[:limit]
            alarms = [
                ArmedAlarm(*key, self.switches[key].generation, self.switches[key].alarm_due)
                for key in page
            ]
        more = len(armed) > limit
        return ArmedPage(alarms, json.dumps(page[-1]) if more else None)

    # -- dependencies --------------------------------------------------------------------
    def depends_on_is(self, namespace: str, scope: str, found: Switch | None) -> MemoryWrite:
        def check() -> None:
            current = self.switches.get((namespace, scope))
            if (current is None) != (found is None):
                raise ConditionFailed(scope)
            if current is not None and found is not None and current.depends_on != found.depends_on:
                raise ConditionFailed(scope)

        return MemoryWrite(check, lambda: None, (item_bytes(scope),))

    def add_dependant(self, namespace: str, parent: str, dependant: str) -> MemoryWrite:
        key = (namespace, parent, dependant)
        return MemoryWrite(
            lambda: None, lambda: self.dependant_rows.__setitem__(key, True), (item_bytes(key),)
        )

    def remove_dependant(self, namespace: str, parent: str, dependant: str) -> MemoryWrite:
        key = (namespace, parent, dependant)

        def apply() -> None:
            self.dependant_rows.pop(key, None)

        return MemoryWrite(lambda: None, apply, (item_bytes(key),))

    def dependants(self, namespace: str, parent: str, limit: int) -> tuple[list[str], int]:
        with self._lock:
            found = sorted(d for (n, p, d) in self.dependant_rows if (n, p) == (namespace, parent))
        return found[:limit], len(found)

    def require_holder(self, namespace: str, scope: str, holder: str) -> MemoryWrite:
        def check() -> None:
            current = self.switches.get((namespace, scope))
            if current is None or current.holder != holder or current.state == "fired":
                raise ConditionFailed(scope)

        return MemoryWrite(check, lambda: None, (item_bytes(scope),))

    def fire_switch(self, switch: Switch, death: Death, now: datetime, *also: Write) -> None:
        at = (switch.namespace, switch.scope)
        key = (death.namespace, death.scope, death.generation)

        def check() -> None:
            current = self.switches.get(at)
            if (
                current is None
                or current.state != "armed"
                or current.generation != switch.generation
                or current.deadline > now
                or key in self.deaths
                or indexed in self.death_index
            ):
                raise ConditionFailed(switch.scope)

        def apply() -> None:
            self.switches[at] = self.switches[at].changed(state="fired")
            self.deaths[key] = death.model_copy(deep=True)
            self.death_index[indexed] = (death.scope, death.generation)

        indexed = (death.namespace, death.position)
        sizes = (
            item_bytes(switch.scope, switch),
            item_bytes(switch.scope, death),
            item_bytes((indexed, death.scope)),
        )
        disarmed = quota_count(switch.namespace, "armed_switches", -1, key=switch.scope)
        self.commit([MemoryWrite(check, apply, sizes, counts=(disarmed,)), *also])

    def move_alarm(self, switch: Switch, previous_due: datetime) -> bool:
        with self._lock:
            current = self.switches.get((switch.namespace, switch.scope))
            if (
                current is None
                or current.state != "armed"
                or current.generation != switch.generation
                or current.alarm_due != previous_due
            ):
                return False
            self.switches[(switch.namespace, switch.scope)] = current.changed(
                alarm_due=switch.alarm_due
            )
            return True

    def grant_grace(self, switch: Switch, missed: datetime, previous_due: datetime) -> bool:
        with self._lock:
            current = self.switches.get((switch.namespace, switch.scope))
            if (
                current is None
                or current.state != "armed"
                or current.generation != switch.generation
                or current.deadline != missed
                or current.alarm_due != previous_due
            ):
                return False
            self.switches[(switch.namespace, switch.scope)] = current.changed(
                deadline=switch.deadline, alarm_due=switch.alarm_due
            )
            return True

    def pauses(self, namespace: str) -> list[Pause]:
        with self._lock:
            found = sorted(
                (prefix, pause)
                for (ns, prefix), pause in self.pause_rows.items()
                if ns == namespace
            )
            return [pause.model_copy() for _, pause in found]

    def save_pause(self, pause: Pause, expected_version: int | None) -> MemoryWrite:
        key = (pause.namespace, pause.scope_prefix)
        return self._versioned(self.pause_rows, key, pause, expected_version)

    def get_death(self, namespace: str, scope: str, generation: int) -> Death | None:
        with self._lock:
            found = self.deaths.get((namespace, scope, generation))
            return found.model_copy(deep=True) if found else None

    def latest_death(self, namespace: str, scope: str) -> Death | None:
        with self._lock:
            found = [d for (ns, sc, _), d in self.deaths.items() if (ns, sc) == (namespace, scope)]
            if not found:
                return None
            return max(found, key=lambda d: d.generation).model_copy(deep=True)

    def recent_deaths(self, namespace: str, before: str | None, limit: int) -> list[Death]:
        with self._lock:
            positions = sorted(
                (position for ns, position in self.death_index if ns == namespace),
                reverse=True,
            )
            newer = [p for p in positions if before is None or p < before][:limit]
            keys = [self.death_index[(namespace, p)] for p in newer]
            return [self.deaths[(namespace, *k)].model_copy(deep=True) for k in keys]

    def save_death(self, death: Death, expected_version: int) -> MemoryWrite:
        key = (death.namespace, death.scope, death.generation)
        return self._versioned(self.deaths, key, death, expected_version, deep=True)

    def add_released_page(self, page: ReleasedPage) -> MemoryWrite:
        key = (page.namespace, page.scope, page.generation, page.number)

        def check() -> None:
            if key in self.released_pages:
                raise ConditionFailed(page.scope)

        def apply() -> None:
            self.released_pages[key] = page.model_copy(deep=True)

        return MemoryWrite(check, apply, (item_bytes(key, page),))

    def get_released_page(
        self, namespace: str, scope: str, generation: int, number: int
    ) -> ReleasedPage | None:
        with self._lock:
            found = self.released_pages.get((namespace, scope, generation, number))
            return found.model_copy(deep=True) if found else None
