"""Schemathesis hooks for tools/local-stack/tests/api_specs.rs, loaded through
SCHEMATHESIS_HOOKS (the test sets it to this file's path).

Two checks of our own, next to Schemathesis's built-in ones.

Which 400 answers a schema-valid request may get. docs/openapi.yaml is the spec of every
deployment, so it cannot state what a deployment's rule set decides: the
largest party of a world (its maxPartySize), the rating range
([ratings.min, ratings.max]), which worlds have which regions and which
attributes it declares, which worlds share tickets (their queueGroup). A
schema-valid request may therefore be refused with 400 INVALID_PARTY,
INVALID_RATING, INVALID_LATENCIES, INVALID_ATTRIBUTES or INVALID_WORLDS,
all five documented in the spec, and
schemathesis.toml lets positive_data_acceptance take a 400 on the operations
that read those fields. This check keeps that narrow: a schema-valid request
refused with a 400 of any other code (INVALID_REQUEST, say) fails the run.
"""

import schemathesis

CONFIGURATION_REFUSALS = frozenset(
    {"INVALID_PARTY", "INVALID_RATING", "INVALID_LATENCIES", "INVALID_ATTRIBUTES", "INVALID_WORLDS"}
)


@schemathesis.check
def schema_valid_requests_are_refused_only_by_the_configuration(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        code = response.json()["data"]["error"]
    except Exception:  # noqa: BLE001 - any other body is the failure itself
        code = None
    if code not in CONFIGURATION_REFUSALS:
        raise AssertionError(
            f"a schema-valid request was refused with 400 {code}; only "
            f"{', '.join(sorted(CONFIGURATION_REFUSALS))} depend on the configuration "
            "(docs/openapi.yaml should describe what else is refused)"
        )
    return None


@schemathesis.check
def payload_too_large_only_past_the_documented_limit(ctx, response, case):
    """A 413 only for a body over its operation's `x-max-body-bytes`.

    JSON Schema bounds lengths in characters and items, not a body's bytes,
    so a schema-valid body can exceed the documented byte limit (100 party
    members of 128 characters each, a backfill's teams written with
    \\u escapes); schemathesis.toml lets positive_data_acceptance take a 413
    on the operations with a body, and this check holds every 413 to the
    limit the operation documents: a 413 for a body within it fails.
    """
    if response.status_code != 413:
        return None
    body = response.request.body or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    request_body = case.operation.definition.raw.get("requestBody") or {}
    limit = request_body.get("x-max-body-bytes")
    if limit is None:
        raise AssertionError("413 from an operation that documents no body limit")
    if len(body) <= limit:
        raise AssertionError(f"413 for a body of {len(body)} bytes, within the documented {limit}")
    return None
