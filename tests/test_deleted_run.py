"""A Dagster run deleted while it runs (anyone who reaches the webserver's GraphQL can) fails that run in the batch's
eyes; it no longer crashes the batch with `'NoneType' object has no attribute 'is_success'`."""

import dagster as dg
import pytest

from mcp_evals_pipeline.pipeline import _raise_if_interrupted, _succeeded


@dg.asset
def deletes_its_own_run(context: dg.AssetExecutionContext) -> int:
    context.instance.delete_run(context.run_id)
    return 1


@dg.asset
def stays() -> int:
    return 1


def test_a_run_deleted_while_it_ran_counts_as_failed() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        gone = dg.materialize([deletes_its_own_run], instance=instance, raise_on_error=False)
        with pytest.raises(AttributeError):  # what the batch used to read, and crash on
            _ = gone.success
        assert _succeeded(gone) is False
        _raise_if_interrupted(gone)  # not an interrupt: the batch goes on with the next trial
        kept = dg.materialize([stays], instance=instance)
        assert _succeeded(kept) is True
