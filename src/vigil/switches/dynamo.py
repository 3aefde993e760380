"""Dead-man switches and deaths on DynamoDB.

A switch is kept as plain top-level attributes (no JSON document) so that the steady-state
beat is one UpdateItem whose condition and new values touch only what changed.
"""

from __future__ import annotations

import re
import zlib
from datetime import datetime
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s, epoch_ms, from_ms
from vigil.kit.uow import ConditionFailed, Write
from vigil.quotas.store import quota_count
from vigil.switches.calendars import Calendar
from vigil.switches.records import (
    PAUSE_RETAIN,
    Beat,
    Death,
    Pause,
    ReleasedPage,
    Switch,
    beat_slot,
)
from vigil.switches.store import ArmedAlarm, ArmedPage, SwitchStore, sweep_shard

# The deaths' index (template.yaml, gsi1, which held leases share under keys of their own): a
# death carries its partition and position there, so firing writes no row of the index's own.
DEATH_INDEX = "gsi1"
# The sweep index (template.yaml, gsi2): sparse, keys only. Its partition key, ``sweep``, names
# an armed switch's shard and is removed when it fires or is put disarmed; its sort key is the
# table's own ``pk``.
SWEEP_INDEX = "gsi2"
# BatchGetItem's most keys a request.
_BATCH_GET_KEYS = 100
_TIMES = {
    "deadline",
    "armed_at",
    "last_beat_at",
    "alarm_due",
    "flapping_since",
    "run_started_at",
    "short_before",
}
_NUMBERS = {"generation", "expect_within_seconds", "beats", "version", "follows_death"}


def _scope_pk(namespace: str, scope: str) -> dict[str, str]:
    # The scope goes in the partition key, which has room for any scope (2 KB, and an exact
    # match, so no scope can be read as the prefix of another); its deaths sort under it.
    return attr_s(f"NS#{namespace}#SW#{scope}")


def _switch_key(namespace: str, scope: str) -> dict[str, Any]:
    return {"pk": _scope_pk(namespace, scope), "sk": attr_s("SWITCH")}


# A switch's dependants, one row each in its scope's partition: written when a beat names or
# changes its depends_on, read by its death's alert.
DEPENDANT = "DEPENDANT#"


def _dependant_key(namespace: str, parent: str, dependant: str) -> dict[str, Any]:
    return {"pk": _scope_pk(namespace, parent), "sk": attr_s(DEPENDANT + dependant)}


def _death_key(namespace: str, scope: str, generation: int) -> dict[str, Any]:
    return {"pk": _scope_pk(namespace, scope), "sk": attr_s(f"DEATH#{generation:012d}")}


def _page_key(namespace: str, scope: str, generation: int, number: int) -> dict[str, Any]:
    # Not under DEATH#, so that the query for the latest death never meets a page.
    return {
        "pk": _scope_pk(namespace, scope),
        "sk": attr_s(f"RELEASED#{generation:012d}#{number:06d}"),
    }


def _switch_index_key(namespace: str, scope: str) -> dict[str, Any]:
    # One partition per namespace, sorted by scope, so a scope prefix is one key range.
    return {"pk": attr_s(f"NS#{namespace}#SWITCHES"), "sk": attr_s(scope)}


def _pauses_pk(namespace: str) -> dict[str, str]:
    # One partition per namespace, one row per prefix, so that the expiry path reads every
    # pause of the namespace with one query.
    return attr_s(f"NS#{namespace}#PAUSES")


def _pause_item(pause: Pause) -> dict[str, Any]:
    item = {
        "pk": _pauses_pk(pause.namespace),
        "sk": attr_s(pause.scope_prefix),
        "version": attr_n(pause.version),
        "doc": attr_s(pause.model_dump_json()),
    }
    ends = pause.ends_at
    if ends is not None:
        # Dropped by DynamoDB's TTL a while after it ended; the reads go by its times.
        item["ttl"] = attr_n(int((ends + PAUSE_RETAIN).timestamp()))
    return item


# The deaths' index is spread over this many partitions per namespace, by scope: a burst of
# deaths in one namespace writes each partition at a 32nd of its rate, where one
# time-ordered partition would take every write at its end (DynamoDB gives a partition of an
# index, as of a table, 1,000 write units a second). Listing reads every partition.
DEATH_SHARDS = 32
# Where the deaths' index was before it was gsi1: rows of the table of their own, written in
# the firing's transaction. ``vigil.stores.backfill`` deletes what is left of them.
_OLD_DEATH_ROW = re.compile(r"^NS#[^#]+#DEATHS#\d+$")


def is_old_death_row(item: dict[str, Any]) -> bool:
    """Whether ``item`` is a row of the deaths' index from before it was gsi1."""
    return _OLD_DEATH_ROW.match(item["pk"]["S"]) is not None


def _deaths_pk(namespace: str, shard: int) -> dict[str, str]:
    return attr_s(f"NS#{namespace}#DEATHS#{shard}")


def _death_index_keys(death: Death) -> dict[str, Any]:
    # Sorted by when each death fired in its partition: newest first is one query read
    # backwards per partition, merged; each entry names its death by the table's key.
    return {
        "gsi1pk": _deaths_pk(death.namespace, zlib.crc32(death.scope.encode()) % DEATH_SHARDS),
        "gsi1sk": attr_s(death.position),
    }


def _death_item(death: Death) -> dict[str, Any]:
    return {
        **_death_key(death.namespace, death.scope, death.generation),
        **_death_index_keys(death),
        "version": attr_n(death.version),
        "doc": attr_s(death.model_dump_json()),
    }


def _value(name: str, value: Any) -> dict[str, Any]:
    if name in _TIMES:
        return attr_n(epoch_ms(value))
    if name in _NUMBERS:
        return attr_n(value)
    if name == "on_expiry":
        return attr_s(",".join(value))
    if name == "recent":
        return {"M": {str(slot): attr_n(minute) for slot, minute in value.items()}}
    if name == "flaps":
        return attr_s(",".join(str(epoch_ms(moment)) for moment in value))
    if name == "calendar":
        return attr_s(Calendar.model_validate(value).model_dump_json())
    return attr_s(value)


def _sweep_value(namespace: str, scope: str) -> dict[str, str]:
    return attr_s(f"SWEEP#{sweep_shard(namespace, scope)}")


def _switch_item(switch: Switch) -> dict[str, Any]:
    item = _switch_key(switch.namespace, switch.scope)
    for name, value in switch.model_dump().items():
        if value is not None and value != []:
            item[name] = _value(name, value)
    if switch.state == "armed":
        # The same value for as long as the switch is armed, and no projected attribute: a
        # beat, an alarm move or a whole put of the armed switch writes nothing to the index.
        item["sweep"] = _sweep_value(switch.namespace, switch.scope)
    return item


def _switch(item: dict[str, Any]) -> Switch:
    fields: dict[str, Any] = {}
    for name in Switch.model_fields:
        if name not in item:
            fields[name] = {"recent": {}, "flaps": []}.get(name)
        elif name in _TIMES:
            fields[name] = from_ms(item[name])
        elif name in _NUMBERS:
            fields[name] = int(item[name]["N"])
        elif name == "on_expiry":
            fields[name] = [a for a in item[name]["S"].split(",") if a]
        elif name == "recent":
            fields[name] = {int(slot): int(n["N"]) for slot, n in item[name]["M"].items()}
        elif name == "flaps":
            fields[name] = [from_ms(attr_n(int(ms))) for ms in item[name]["S"].split(",") if ms]
        elif name == "calendar":
            fields[name] = Calendar.model_validate_json(item[name]["S"])
        else:
            fields[name] = item[name]["S"]
    return Switch.model_validate(fields)


class DynamoSwitches(DynamoBase, SwitchStore):
    def get_switch(self, namespace: str, scope: str) -> Switch | None:
        key = _switch_key(namespace, scope)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return _switch(item) if item else None

    def get_switches(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Switch]:
        found = map(_switch, self._batch_get([_switch_key(ns, scope) for ns, scope in set(keys)]))
        return {(switch.namespace, switch.scope): switch for switch in found}

    def beat_switch(self, namespace: str, scope: str, holder: str, beat: Beat) -> Switch | None:
        changes = beat.changes()
        # A notify address the beat names is checked (a registered mailbox) on the slow path:
        # the fast one takes only the one the switch has.
        notify_address = changes.pop("notify_address", None)
        # So is a dependency the beat names: the fast path takes only the one it has.
        depends_on = changes.pop("depends_on", None)
        now = beat.at
        names = {
            "#st": "state",
            "#holder": "holder",
            "#deadline": "deadline",
            "#alarm": "alarm_due",
        }
        values: dict[str, Any] = {
            ":armed": attr_s("armed"),
            ":holder": attr_s(holder),
            ":now": attr_n(epoch_ms(now)),
            ":one": attr_n(1),
            ":new_deadline": attr_n(epoch_ms(changes["deadline"])),
        }
        # A beat sets the terms it names and keeps the rest; it removes those it clears (its
        # calendar, its run: Beat.changes gives them as None).
        sets, removes = [], []
        for index, (name, value) in enumerate(changes.items()):
            names[f"#f{index}"] = name
            if value is None:
                removes.append(f"#f{index}")
            else:
                sets.append(f"#f{index} = :v{index}")
                values[f":v{index}"] = _value(name, value)
        # This beat's half hour of the day's beats (Switch.recent), set with no read.
        slot, minute = beat_slot(now)
        names["#recent"], names["#slot"] = "recent", str(slot)
        values[":minute"] = attr_n(minute)
        sets += ["#recent.#slot = :minute", "beats = beats + :one", "version = version + :one"]
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        # A switch stored before it kept its beats has no map to set an entry of: its next
        # beat takes the slow path, which writes the whole item.
        condition = (
            "#st = :armed AND #holder = :holder AND #deadline > :now"
            " AND #alarm <= :new_deadline AND attribute_exists(#recent)"
        )
        if notify_address is not None:
            names["#notify"] = "notify_address"
            condition += " AND #notify = :notify"
            values[":notify"] = attr_s(notify_address)
        if depends_on is not None:
            names["#dep"] = "depends_on"
            condition += " AND #dep = :dep"
            values[":dep"] = attr_s(depends_on)
        if beat.phase == "finish":
            # A run finished sooner than its floor is told: the slow path does that.
            names["#short"] = "short_before"
            condition += " AND (attribute_not_exists(#short) OR #short <= :now)"
        elif beat.phase == "start":
            # A start with no beat since the run's own may be a retry: the slow path keeps the
            # run's start (Switch.beaten).
            names["#run"], names["#last"] = "run_started_at", "last_beat_at"
            condition += " AND (attribute_not_exists(#run) OR #run <> #last)"
        try:
            response = self._call(
                self.client.update_item,
                TableName=self.table,
                Key=_switch_key(namespace, scope),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ConditionFailed:
            return None
        return _switch(response["Attributes"])

    def save_switch(self, switch: Switch, expected_version: int | None) -> DynamoWrite:
        if expected_version is None:
            # The index row is written here and only here: the steady beat never touches it.
            index = _switch_index_key(switch.namespace, switch.scope)
            first = self._put(_switch_item(switch), "attribute_not_exists(pk)")
            indexed = self._put(index, "attribute_not_exists(pk)")
            return DynamoWrite([*first.items, *indexed.items])
        return self._put(
            _switch_item(switch),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(expected_version)},
        )

    def list_switches(
        self, namespace: str, prefix: str, after: str | None, limit: int
    ) -> list[Switch]:
        pk = f"NS#{namespace}#SWITCHES"
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": attr_s(pk)},
            "Limit": limit,
            "ConsistentRead": True,
        }
        if prefix:
            request["KeyConditionExpression"] += " AND begins_with(sk, :prefix)"
            request["ExpressionAttributeValues"][":prefix"] = attr_s(prefix)
        if after is not None:
            request["ExclusiveStartKey"] = _switch_index_key(namespace, after)
        rows = self._call(self.client.query, **request).get("Items", [])
        scopes = [row["sk"]["S"] for row in rows]
        found = {
            switch.scope: switch
            for switch in map(_switch, self._batch_get([_switch_key(namespace, s) for s in scopes]))
        }
        return [found[scope] for scope in scopes if scope in found]

    def armed_alarms(self, shard: int, after: str | None, limit: int) -> ArmedPage:
        # The index page names the switches; their alarms are read by key, eventually
        # consistent (half a unit each) and only the attributes the sweep looks at.
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": SWEEP_INDEX,
            "KeyConditionExpression": "sweep = :shard",
            "ExpressionAttributeValues": {":shard": attr_s(f"SWEEP#{shard}")},
            "Limit": limit,
        }
        if after is not None:
            request["KeyConditionExpression"] += " AND pk > :after"
            request["ExpressionAttributeValues"][":after"] = attr_s(after)
        response = self._call(self.client.query, **request)
        keys = [{"pk": row["pk"], "sk": row["sk"]} for row in response.get("Items", [])]
        alarms = [
            ArmedAlarm(
                item["namespace"]["S"],
                item["scope"]["S"],
                int(item["generation"]["N"]),
                from_ms(item["alarm_due"]),
            )
            for item in self._alarms_of(keys)
            if item.get("state", {}).get("S") == "armed"
        ]
        last = response.get("LastEvaluatedKey")
        return ArmedPage(alarms, last["pk"]["S"] if last else None)

    def _alarms_of(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_GET_KEYS):
            pending: dict[str, Any] = {
                self.table: {
                    "Keys": keys[start : start + _BATCH_GET_KEYS],
                    "ProjectionExpression": "#ns, #scope, #st, #gen, #due",
                    "ExpressionAttributeNames": {
                        "#ns": "namespace",
                        "#scope": "scope",
                        "#st": "state",
                        "#gen": "generation",
                        "#due": "alarm_due",
                    },
                }
            }
            while pending:
                response = self._call(self.client.batch_get_item, RequestItems=pending)
                found += response["Responses"].get(self.table, [])
                pending = response.get("UnprocessedKeys") or {}
        return found

    # -- what a store written before the indexes needs (vigil.stores.backfill) -------------
    def index_old_switch(self, item: dict[str, Any]) -> tuple[bool, bool]:
        """Gives a switch stored before the indexes what it lacks: its sweep shard, if it is
        still armed at the version read, and its row of ``list_switches``, if there is none
        (an existing row is left as it is). Whether it wrote each."""
        switch = _switch(item)
        sweepable = switch.state == "armed" and "sweep" not in item and self._mark_for_sweep(switch)
        row = _switch_index_key(switch.namespace, switch.scope)
        indexed = self._put_new(row)
        return sweepable, indexed

    def _mark_for_sweep(self, switch: Switch) -> bool:
        """Puts an armed switch stored before the sweep index in its shard, if it is still
        armed at the version read; whether it was."""
        return self._written(
            self.client.update_item,
            Key=_switch_key(switch.namespace, switch.scope),
            UpdateExpression="SET sweep = :shard",
            ConditionExpression="#st = :armed AND version = :version",
            ExpressionAttributeNames={"#st": "state"},
            ExpressionAttributeValues={
                ":shard": _sweep_value(switch.namespace, switch.scope),
                ":armed": attr_s("armed"),
                ":version": attr_n(switch.version),
            },
        )

    def index_death(self, item: dict[str, Any]) -> bool:
        """Gives a death stored before the deaths' index was gsi1 its keys there, if it has
        none yet; whether it did. The keys follow from what never changes (its namespace,
        scope and when it fired), so a later save of the death writes the same ones."""
        death = Death.model_validate_json(item["doc"]["S"])
        keys = _death_index_keys(death)
        return self._written(
            self.client.update_item,
            Key={"pk": item["pk"], "sk": item["sk"]},
            UpdateExpression="SET gsi1pk = :pk, gsi1sk = :sk",
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(gsi1pk)",
            ExpressionAttributeValues={":pk": keys["gsi1pk"], ":sk": keys["gsi1sk"]},
        )

    def delete_old_death_row(self, item: dict[str, Any]) -> bool:
        """Deletes a row of the deaths' index from before it was gsi1; whether it did."""
        return self._written(
            self.client.delete_item,
            Key={"pk": item["pk"], "sk": item["sk"]},
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(doc)",
        )

    # -- dependencies --------------------------------------------------------------------
    def depends_on_is(self, namespace: str, scope: str, found: Switch | None) -> DynamoWrite:
        check: dict[str, Any] = {"TableName": self.table, "Key": _switch_key(namespace, scope)}
        if found is None:
            check["ConditionExpression"] = "attribute_not_exists(pk)"
        elif found.depends_on is None:
            check["ConditionExpression"] = "attribute_exists(pk) AND attribute_not_exists(#dep)"
            check["ExpressionAttributeNames"] = {"#dep": "depends_on"}
        else:
            check["ConditionExpression"] = "#dep = :dep"
            check["ExpressionAttributeNames"] = {"#dep": "depends_on"}
            check["ExpressionAttributeValues"] = {":dep": attr_s(found.depends_on)}
        return DynamoWrite([{"ConditionCheck": check}])

    def add_dependant(self, namespace: str, parent: str, dependant: str) -> DynamoWrite:
        return self._put(_dependant_key(namespace, parent, dependant))

    def remove_dependant(self, namespace: str, parent: str, dependant: str) -> DynamoWrite:
        key = _dependant_key(namespace, parent, dependant)
        return DynamoWrite([{"Delete": {"TableName": self.table, "Key": key}}])

    def dependants(self, namespace: str, parent: str, limit: int) -> tuple[list[str], int]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": _scope_pk(namespace, parent),
                ":prefix": attr_s(DEPENDANT),
            },
            "ConsistentRead": True,
        }
        first = self._call(self.client.query, **request, Limit=limit).get("Items", [])
        named = [item["sk"]["S"].removeprefix(DEPENDANT) for item in first]
        if len(first) < limit:
            return named, len(named)
        count, start = 0, None
        while True:  # keys only: a count of a few thousand is a page or two
            page = self._call(
                self.client.query,
                **request,
                Select="COUNT",
                **({"ExclusiveStartKey": start} if start else {}),
            )
            count += page["Count"]
            start = page.get("LastEvaluatedKey")
            if start is None:
                return named, count

    def require_holder(self, namespace: str, scope: str, holder: str) -> DynamoWrite:
        return DynamoWrite(
            [
                {
                    "ConditionCheck": {
                        "TableName": self.table,
                        "Key": _switch_key(namespace, scope),
                        "ConditionExpression": "holder = :holder AND #st <> :fired",
                        "ExpressionAttributeNames": {"#st": "state"},
                        "ExpressionAttributeValues": {
                            ":holder": attr_s(holder),
                            ":fired": attr_s("fired"),
                        },
                    }
                }
            ]
        )

    def fire_switch(self, switch: Switch, death: Death, now: datetime, *also: Write) -> None:
        disarmed = quota_count(switch.namespace, "armed_switches", -1, key=switch.scope)
        fired = DynamoWrite(
            [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _switch_key(switch.namespace, switch.scope),
                        "UpdateExpression": (
                            "SET #st = :fired, version = version + :one REMOVE sweep"
                        ),
                        "ConditionExpression": (
                            "#st = :armed AND generation = :generation AND deadline <= :now"
                        ),
                        "ExpressionAttributeNames": {"#st": "state"},
                        "ExpressionAttributeValues": {
                            ":fired": attr_s("fired"),
                            ":armed": attr_s("armed"),
                            ":one": attr_n(1),
                            ":generation": attr_n(switch.generation),
                            ":now": attr_n(epoch_ms(now)),
                        },
                    }
                },
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": _death_item(death),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ],
            counts=(disarmed,),
        )
        self.commit([fired, *also])

    def move_alarm(self, switch: Switch, previous_due: datetime) -> bool:
        try:
            self._call(
                self.client.update_item,
                TableName=self.table,
                Key=_switch_key(switch.namespace, switch.scope),
                UpdateExpression="SET alarm_due = :due, version = version + :one",
                ConditionExpression=(
                    "#st = :armed AND generation = :generation AND alarm_due = :previous"
                ),
                ExpressionAttributeNames={"#st": "state"},
                ExpressionAttributeValues={
                    ":due": attr_n(epoch_ms(switch.alarm_due)),
                    ":previous": attr_n(epoch_ms(previous_due)),
                    ":armed": attr_s("armed"),
                    ":generation": attr_n(switch.generation),
                    ":one": attr_n(1),
                },
            )
        except ConditionFailed:
            return False
        return True

    def grant_grace(self, switch: Switch, missed: datetime, previous_due: datetime) -> bool:
        try:
            self._call(
                self.client.update_item,
                TableName=self.table,
                Key=_switch_key(switch.namespace, switch.scope),
                UpdateExpression=(
                    "SET deadline = :deadline, alarm_due = :due, version = version + :one"
                ),
                ConditionExpression=(
                    "#st = :armed AND generation = :generation AND deadline = :missed"
                    " AND alarm_due = :previous"
                ),
                ExpressionAttributeNames={"#st": "state"},
                ExpressionAttributeValues={
                    ":deadline": attr_n(epoch_ms(switch.deadline)),
                    ":due": attr_n(epoch_ms(switch.alarm_due)),
                    ":missed": attr_n(epoch_ms(missed)),
                    ":previous": attr_n(epoch_ms(previous_due)),
                    ":armed": attr_s("armed"),
                    ":generation": attr_n(switch.generation),
                    ":one": attr_n(1),
                },
            )
        except ConditionFailed:
            return False
        return True

    def pauses(self, namespace: str) -> list[Pause]:
        request = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": _pauses_pk(namespace)},
            "ConsistentRead": True,
        }
        return [
            Pause.model_validate_json(item["doc"]["S"])
            for page in self._pages(request)
            for item in page.get("Items", [])
        ]

    def save_pause(self, pause: Pause, expected_version: int | None) -> DynamoWrite:
        if expected_version is None:
            return self._put(_pause_item(pause), "attribute_not_exists(pk)")
        return self._put(
            _pause_item(pause),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(expected_version)},
        )

    def get_death(self, namespace: str, scope: str, generation: int) -> Death | None:
        key = _death_key(namespace, scope, generation)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return Death.model_validate_json(item["doc"]["S"]) if item else None

    def latest_death(self, namespace: str, scope: str) -> Death | None:
        response = self._call(
            self.client.query,
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": _scope_pk(namespace, scope),
                ":prefix": attr_s("DEATH#"),
            },
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = response.get("Items", [])
        return Death.model_validate_json(items[0]["doc"]["S"]) if items else None

    def recent_deaths(self, namespace: str, before: str | None, limit: int) -> list[Death]:
        # The newest ``limit`` of each partition hold the newest ``limit`` of all. An index
        # is read eventually consistently: a death fired this last second may be missing.
        rows = []
        for shard in range(DEATH_SHARDS):
            request: dict[str, Any] = {
                "TableName": self.table,
                "IndexName": DEATH_INDEX,
                "KeyConditionExpression": "gsi1pk = :pk",
                "ExpressionAttributeValues": {":pk": _deaths_pk(namespace, shard)},
                "ScanIndexForward": False,
                "Limit": limit,
            }
            if before is not None:
                request["KeyConditionExpression"] += " AND gsi1sk < :before"
                request["ExpressionAttributeValues"][":before"] = attr_s(before)
            rows += self._call(self.client.query, **request).get("Items", [])
        rows.sort(key=lambda row: row["gsi1sk"]["S"], reverse=True)
        keys = [(row["pk"]["S"], row["sk"]["S"]) for row in rows[:limit]]
        items = self._batch_get([{"pk": attr_s(pk), "sk": attr_s(sk)} for pk, sk in keys])
        found = {(item["pk"]["S"], item["sk"]["S"]): item for item in items}
        return [Death.model_validate_json(found[key]["doc"]["S"]) for key in keys if key in found]

    def save_death(self, death: Death, expected_version: int) -> DynamoWrite:
        return self._put(
            _death_item(death),
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(expected_version)},
        )

    def add_released_page(self, page: ReleasedPage) -> DynamoWrite:
        item = {
            **_page_key(page.namespace, page.scope, page.generation, page.number),
            "doc": attr_s(page.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def get_released_page(
        self, namespace: str, scope: str, generation: int, number: int
    ) -> ReleasedPage | None:
        key = _page_key(namespace, scope, generation, number)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return ReleasedPage.model_validate_json(item["doc"]["S"]) if item else None
