"""rest-crud: a wload scenario plugin, written in Python with wload's
Python SDK (sdk/python, `wload.plugin`), that runs a REST create → read →
update → delete cycle on a JSON resource and checks every step.

Build: `wload-py build --plugin rest_crud.py -o rest-crud.wasm`.
"""

import json

from wload import check, http
from wload.plugin import Param, ParamError

NAME = "rest-crud"
VERSION = "0.1.0"
SUMMARY = "Creates, reads, updates and deletes one JSON resource per iteration, checking each step"
DOCS = """\
Each iteration: POST the item to the collection (201 or 200, the created
object carrying its id), GET it back (200, the item's fields), PUT the
item with the update merged in (200), GET it again (200, the updated
fields), DELETE it (204 or 200) and GET it once more (404). Every step is
a check named after it; requests are named by template
(GET http://host/items/{id}), so ids do not make series of their own.
An iteration stops at the first step that fails."""

PARAMS = [
    Param("base-url", "text", docs="The API's origin, e.g. http://127.0.0.1:8080."),
    Param(
        "resource",
        "text",
        default="/items",
        docs="The collection's path: POST creates there, PATH/ID is one item.",
    ),
    Param(
        "item",
        "json",
        default='{"name": "wload", "qty": 1}',
        docs="The JSON object created each iteration.",
    ),
    Param(
        "update",
        "json",
        default='{"qty": 2}',
        docs="The fields the PUT changes: merged into the item, the whole object sent.",
    ),
    Param("id-field", "text", default="id", docs="The created object's field holding its id."),
]

_cfg = {}


def configure(params):
    base = params["base-url"].rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ParamError("base-url", f"{base!r} is not an http:// or https:// origin")
    resource = params["resource"]
    if not resource.startswith("/"):
        raise ParamError("resource", f"{resource!r} is not a path: start it with /")
    for name in ("item", "update"):
        if not isinstance(params[name], dict):
            raise ParamError(name, f"{json.dumps(params[name])} is not a JSON object")
    _cfg.update(
        collection=base + resource.rstrip("/"),
        item=params["item"],
        update=params["update"],
        id_field=params["id-field"],
    )


def _same(sent, got):
    """Every field sent came back with its value."""
    return isinstance(got, dict) and all(got.get(k) == v for k, v in sent.items())


def _body(res):
    try:
        return res.json()
    except ValueError:
        return None


def iteration():
    collection, item = _cfg["collection"], _cfg["item"]
    one = f"{collection}/{{id}}"
    created = http.post(collection, json=item, name=collection)
    body = _body(created)
    if not check("create answers 201 or 200", created.status in (200, 201)):
        raise RuntimeError(f"POST {collection} answered {created.status}")
    item_id = body.get(_cfg["id_field"]) if isinstance(body, dict) else None
    if not check(f"created object has its {_cfg['id_field']}", item_id is not None):
        raise RuntimeError(f"POST {collection} answered no {_cfg['id_field']!r}: {created.text()[:200]}")
    url = f"{collection}/{item_id}"

    read = http.get(url, name=one)
    check("read answers 200", read.status == 200)
    check("read returns the created fields", _same(item, _body(read)))

    updated_item = {**item, **_cfg["update"]}
    updated = http.put(url, json=updated_item, name=one)
    check("update answers 200", updated.status == 200)
    reread = http.get(url, name=one)
    check("read returns the updated fields", reread.status == 200 and _same(updated_item, _body(reread)))

    deleted = http.delete(url, name=one)
    check("delete answers 204 or 200", deleted.status in (200, 204))
    gone = http.get(url, name=one, expected_statuses=[404])
    check("read after delete answers 404", gone.status == 404)
