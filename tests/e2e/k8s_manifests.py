"""Validate `wload k8s render` manifests against Kubernetes' own schema.

The official Python client's models (PyPI `kubernetes`) are generated
from Kubernetes' OpenAPI document: every object, field name (camelCase,
as on the wire), type and required field is there. Each document is
walked field by field against its model, so that a misspelt or
misplaced field is an error (the client's from_dict would drop it
silently, as an API server without strict field validation does), and
then built with from_dict, which checks the types.

Usage: python k8s_manifests.py MANIFESTS.yaml OUT.json
Writes the documents as one JSON list to OUT.json when they are valid;
else prints every problem on stderr, exit code 1.
"""

import base64
import binascii
import json
import sys
import types
import typing

import kubernetes.client as k8s
import yaml
from pydantic import BaseModel


def unwrap(ann):
    """The annotation under Optional[...] and Annotated[...]."""
    while True:
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            ann = typing.get_args(ann)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if len(args) != 1:
                return ann
            ann = args[0]
        else:
            return ann


def check(value, ann, path, errors):
    ann = unwrap(ann)
    origin = typing.get_origin(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        if not isinstance(value, dict):
            errors.append(f"{path}: {ann.__name__} must be an object")
            return
        fields = {
            (f.serialization_alias or f.alias or name): f for name, f in ann.model_fields.items()
        }
        for key, item in value.items():
            if key not in fields:
                errors.append(f"{path}.{key}: no such field in {ann.__name__}")
            else:
                check(item, fields[key].annotation, f"{path}.{key}", errors)
        for key, field in fields.items():
            if field.is_required() and key not in value:
                errors.append(f"{path}.{key}: required in {ann.__name__}")
    elif origin is list:
        if not isinstance(value, list):
            errors.append(f"{path}: must be a list")
            return
        (item_ann,) = typing.get_args(ann)
        for i, item in enumerate(value):
            check(item, item_ann, f"{path}[{i}]", errors)
    elif origin is dict:
        if not isinstance(value, dict):
            errors.append(f"{path}: must be a map")
            return
        _, item_ann = typing.get_args(ann)
        for key, item in value.items():
            check(item, item_ann, f"{path}[{key!r}]", errors)


def model_of(doc):
    """The model class of a document, from apiVersion and kind."""
    version = str(doc.get("apiVersion", "")).split("/")[-1]
    name = version[:1].upper() + version[1:] + str(doc.get("kind", ""))
    return getattr(k8s, name, None)


def main(path, out):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    errors = []
    for i, doc in enumerate(docs):
        where = f"document {i} ({doc.get('kind')} {doc.get('metadata', {}).get('name')})"
        model = model_of(doc)
        if model is None:
            errors.append(f"{where}: no model for {doc.get('apiVersion')} {doc.get('kind')}")
            continue
        found = []
        check(doc, model, where, found)
        errors.extend(found)
        if not found:
            try:
                model.from_dict(doc)
            except Exception as e:  # pydantic's ValidationError, or the model's own
                errors.append(f"{where}: {e}")
        for key, value in (doc.get("binaryData") or {}).items():
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as e:
                errors.append(f"{where}.binaryData[{key!r}]: not base64: {e}")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump(docs, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
