"""The engine's word over each ``capture ladder`` step: the step's own before/after scrapes audited
like any window (``checks.audit``), with the client's counts — the server's ``usage`` for the step's
requests — to reconcile against the engine's Δ ``generation_tokens`` / ``prompt_tokens``
(``checks.token_check``: a server whose usage says 100× what the engine generated fails).

A ``capture ladder`` folder (a requests run whose ``capture.json`` has ``kind: ladder``) lists its
steps in the order sent, each with ``metrics_before``/``metrics_after`` and its requests; its
``requests.json`` holds the records in the same order, so step *i* owns the next ``len(requests)``
records. A step whose scrapes are missing or do not parse is left out with the reason (the ladder's
figures still stand on the client's times; they are then not reconciled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchbook.analysis.checks import WindowAudit
    from benchbook.ingest.campaign import Campaign


def ladder_audits(camp: Campaign) -> tuple[list[WindowAudit], list[str]]:
    """One audit per step of every ``capture ladder`` requests run; and, per step not audited, why."""
    from benchbook.analysis import checks
    from benchbook.errors import InputError
    from benchbook.ingest.results_runs import metrics_labels
    from benchbook.jsonfile import load_json

    out: list[WindowAudit] = []
    notes: list[str] = []
    for r in camp.runs_of("requests"):
        cap_file = r.path / "capture.json"
        if not cap_file.is_file():
            continue
        cap = load_json(camp.inside(cap_file, cap_file, "-", "capture.json"))
        if not isinstance(cap, dict) or cap.get("kind") != "ladder" or not isinstance(cap.get("steps"), list):
            continue
        records = load_json(r.file).get("requests", [])
        labels, _ = metrics_labels(camp.manifest, r.id)
        gen = cap.get("generation_tokens") or (cap.get("arguments") or {}).get("max_tokens")
        i = 0
        for k, step in enumerate(cap["steps"]):
            n = len(step.get("requests") or []) or int(step.get("n") or 0)
            recs, i = records[i : i + n], i + n
            name = str(step.get("step", f"step {k}"))
            try:
                before = checks.read_snapshot(
                    camp.snapshot_path(r, step["metrics_before"], f"capture.json $.steps[{k}].metrics_before"),
                    camp.profile,
                )
                after = checks.read_snapshot(
                    camp.snapshot_path(r, step["metrics_after"], f"capture.json $.steps[{k}].metrics_after"),
                    camp.profile,
                )
            except (InputError, KeyError) as e:
                notes.append(f"{r.id}: {name} not reconciled ({e})")
                continue
            client: dict[str, Any] = {
                "received": float(sum(q.get("completion_tokens") or 0 for q in recs)),
                "prompt_tokens": float(sum(q.get("prompt_tokens") or 0 for q in recs)),
            }
            if isinstance(gen, int) and gen > 0:
                client["requested"] = float(gen * len(recs))
            out.append(
                checks.audit(
                    before,
                    after,
                    camp.profile,
                    window=f"{r.id}: {name}",
                    kind="ladder step",
                    run=r.id,
                    arm=r.arm,
                    labels=labels,
                    client=client,
                    sample=(r.id, name, n),  # the step's name and its number of requests
                )
            )
    return out, notes


def ladder_distinct(camp: Campaign) -> dict[str, bool | None]:
    """Per ``capture ladder`` run, whether its prompts were distinct (``capture.json`` ``prompts.distinct``)."""
    from benchbook.jsonfile import load_json

    out: dict[str, bool | None] = {}
    for r in camp.runs_of("requests"):
        cap_file = r.path / "capture.json"
        if cap_file.is_file():
            cap = load_json(camp.inside(cap_file, cap_file, "-", "capture.json"))
            prompts = cap.get("prompts") if isinstance(cap, dict) else None
            if isinstance(prompts, dict) and isinstance(prompts.get("distinct"), bool):
                out[r.id] = prompts["distinct"]
    return out
