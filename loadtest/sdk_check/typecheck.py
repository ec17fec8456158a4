"""Check a request body against an official SDK's own request types.

The SDKs type request parameters as TypedDicts and never validate them at run time,
so we do it with pydantic (which both SDKs depend on). Two traps, both handled here:

* pydantic validates `Iterable[...]` fields (message lists, content parts) lazily:
  `validate_python` returns a `ValidatorIterator` that checks items only when
  iterated, so we walk the whole result. The TypeAdapter must outlive that walk:
  the iterator refers to its definitions, and pydantic-core panics if they are gone.
* TypedDicts ignore unknown keys, so a misspelt key (`image_urls`) would pass. We
  compare the validated value with the input: anything dropped or coerced differs.
"""

from collections.abc import Iterator

from pydantic import TypeAdapter


def _materialise(value):
    if isinstance(value, dict):
        return {k: _materialise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [_materialise(v) for v in value]
    return value


def _first_difference(want, got, path="$"):
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                return f"{path}.{key}: not in the SDK type (dropped by validation)"
            if key not in want:
                return f"{path}.{key}: added by validation"
            found = _first_difference(want[key], got[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path}: {len(want)} items became {len(got)}"
        for i, (w, g) in enumerate(zip(want, got)):
            found = _first_difference(w, g, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if want == got else f"{path}: {want!r} became {got!r}"


def conformance_problem(sdk_type, value):
    """None if `value` is exactly an instance of `sdk_type`, else what is wrong."""
    adapter = TypeAdapter(sdk_type)
    try:
        validated = _materialise(adapter.validate_python(value))
    except Exception as e:  # pydantic.ValidationError, raised while iterating too
        return str(e)
    return _first_difference(value, validated)
