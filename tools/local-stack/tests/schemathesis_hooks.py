"""Schemathesis hooks for tools/local-stack/tests/api_specs.rs, loaded through
SCHEMATHESIS_HOOKS (the test sets it to this file's path).

A check of our own, next to Schemathesis's built-in ones: which 400 answers a
schema-valid request may get. docs/openapi.yaml is the spec of every
deployment, so it cannot state what a deployment's rule set decides: the
largest party of a world (its maxPartySize), the rating range
([ratings.min, ratings.max]) and which worlds have which regions. A
schema-valid request may therefore be refused with 400 INVALID_PARTY,
INVALID_RATING or INVALID_LATENCIES, all three documented in the spec, and
schemathesis.toml lets positive_data_acceptance take a 400 on the operations
that read those fields. This check keeps that narrow: a schema-valid request
refused with a 400 of any other code (INVALID_REQUEST, say) fails the run.
"""

import schemathesis

CONFIGURATION_REFUSALS = frozenset({"INVALID_PARTY", "INVALID_RATING", "INVALID_LATENCIES"})


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
