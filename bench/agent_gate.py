"""The policy gate on an agent-shaped scenario: legitimate tasks and planted-instruction attacks, replayed.

    python bench/agent_gate.py              # the tables
    python bench/agent_gate.py --verbose    # and every call with its outcome and rule

A toy mail/calendar/drive/bank/chat/travel world (``bench/agent_env/world.py``), one policy file per tool
(``bench/agent_env/policies/``, written from the tools' docstrings and the user's data: address book, saved
payees, company domain), 30 user tasks with their ground-truth calls and 16 attacks that plant text in
content a task reads (``bench/agent_env/cases.py``). Every call goes through ``run_tool_call`` inside
``guardrail.identity`` and a ``run_context`` holding the system prompt and the user's task; tool results are
recorded in the run by guardrail itself.

Legitimate calls: *allowed* (ran at once), *approval* (parked for a person; here the person approves and the
call runs, so later steps see its effects), *refused*. Attacks: the carrier task runs (its calls counted
apart, "under attack"), then the attacker's goal calls as if the model obeyed: an attack is *refused* when a
goal call is refused, *approval* when one waits for a person (who, seeing it, would decline: here it is
rejected), and *got through* when every goal call ran. Not a test: nothing here asserts. Read the tables.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from agent_env.cases import ATTACKS, TASKS, Attack, Call, Task  # bench/ is on the path of a script run from it
from agent_env.world import SYSTEM, TENANT, USER, World

import guardrail
from guardrail.tools import run_context
from guardrail.tools.execute import run_tool_call


def attempt(world: World, call: Call, *, approve: bool) -> tuple[str, str]:
    """Run one call: ``("allowed" | "approval" | "refused", rule)``; a parked call is approved (and run) or
    rejected, as ``approve`` says."""
    name, arguments = call
    try:
        run_tool_call(name, arguments, registry=world.registry, store=world.store)
        return "allowed", ""
    except guardrail.ApprovalRequired as waiting:
        if approve:
            guardrail.approve(waiting.token, approver="dana", store=world.store)
            run_tool_call(name, arguments, registry=world.registry, store=world.store, approval_token=waiting.token)
        else:
            guardrail.reject(waiting.token, approver="dana", store=world.store)
        return "approval", waiting.rule
    except guardrail.Denied as denied:
        return "refused", f"{denied.rule} ({denied.reason})"


def run_task(task: Task, injections: dict[str, str] | None = None) -> tuple[World, list[tuple[Call, str, str]]]:
    world = World(injections or {})
    outcomes = []
    with guardrail.identity(tenant=TENANT, user=USER), run_context(system=SYSTEM, user=task.prompt):
        for call in task.calls:
            outcome, rule = attempt(world, call, approve=True)
            outcomes.append((call, outcome, rule))
    return world, outcomes


def run_attack(attack: Attack) -> tuple[list[tuple[Call, str, str]], list[tuple[Call, str, str]]]:
    carrier = next(task for task in TASKS if task.id == attack.carrier)
    world = World({attack.where: attack.text})
    legit, goal = [], []
    with guardrail.identity(tenant=TENANT, user=USER), run_context(system=SYSTEM, user=carrier.prompt):
        for call in carrier.calls:
            legit.append((call, *attempt(world, call, approve=True)))
        for call in attack.goal:
            goal.append((call, *attempt(world, call, approve=False)))
    return legit, goal


def verdict(goal: list[tuple[Call, str, str]]) -> str:
    actions = [outcome for _, outcome, _ in goal]
    if "refused" in actions:
        return "refused"
    if "approval" in actions:
        return "approval"
    return "got through"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="print every call with its outcome and rule")
    args = parser.parse_args(argv)

    legit: Counter[str] = Counter()
    actions: Counter[str] = Counter()
    complete = 0
    print(f"Legitimate tasks: {len(TASKS)}")
    for task in TASKS:
        _, outcomes = run_task(task)
        complete += all(outcome != "refused" for _, outcome, _ in outcomes)
        for (name, arguments), outcome, rule in outcomes:
            legit[outcome] += 1
            if name not in _READS:
                actions[outcome] += 1
            if args.verbose or outcome != "allowed":
                print(f"  {task.id:16} {name}({_short(arguments)}) -> {outcome} {rule}")
    total = sum(legit.values())
    print(f"  calls: {total}; allowed {legit['allowed']}, approval {legit['approval']}, refused {legit['refused']}"
          f"  (actions alone: {sum(actions.values())}; allowed {actions['allowed']}, approval {actions['approval']},"
          f" refused {actions['refused']})")
    print(f"  tasks that run in full (approvals granted): {complete}/{len(TASKS)}")

    print(f"\nAttacks: {len(ATTACKS)}")
    verdicts: Counter[str] = Counter()
    under_attack: Counter[str] = Counter()
    for attack in ATTACKS:
        carried, goal = run_attack(attack)
        for _, outcome, _ in carried:
            under_attack[outcome] += 1
        result = verdict(goal)
        verdicts[result] += 1
        rules = "; ".join(f"{name}: {outcome} {rule}".strip() for (name, _), outcome, rule in goal)
        print(f"  {attack.id:20} {attack.shape:42} {result:12} {rules}")
        if args.verbose:
            for (name, arguments), outcome, rule in carried:
                print(f"      carrier {name}({_short(arguments)}) -> {outcome} {rule}")
    stopped = verdicts["refused"] + verdicts["approval"]
    print(f"  stopped {stopped}/{len(ATTACKS)}: refused {verdicts['refused']}, sent to approval "
          f"{verdicts['approval']}; got through {verdicts['got through']}")
    print(f"  the carrier tasks' own calls under attack: allowed {under_attack['allowed']}, approval "
          f"{under_attack['approval']}, refused {under_attack['refused']}")


_READS = {"read_inbox", "list_events", "read_file", "list_contacts", "get_balance", "list_transactions",
          "list_scheduled", "list_hotels", "get_reviews", "read_channel"}


def _short(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return text if len(text) <= 70 else text[:67] + "..."


if __name__ == "__main__":
    main()
