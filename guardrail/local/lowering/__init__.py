"""Lowering a contract's JSON Schema for llguidance: what the engine does with each keyword, and the copy it is given.

The local-decoding counterpart of :mod:`guardrail.schema.lower` (which lowers for vendor modes). One module a
job: :mod:`.engine` (keyword tables, engine probes), :mod:`.prepared` (the copy being built and its pending
edits), :mod:`.keywords` (per-keyword decisions: types, strings, arrays, object keys), :mod:`.objects`
(closing objects, key counts), :mod:`.numbers` (numeric bounds), :mod:`.prepare` (the walk that ties them).

Facts checked against llguidance 1.9.1 (``LLMatcher.grammar_from_json_schema`` + ``validate_grammar``):

- compiled and enforced while decoding: ``type``, ``enum``, ``const``, ``anyOf``, ``allOf`` (by intersecting
  the branches; an intersection the engine cannot form is an error), local ``$ref`` (recursion included),
  ``properties`` (keys are generated in the schema's order: the order the keywords appear, ``properties``
  before ``required`` keys that ``properties`` does not list, before any other key), ``additionalProperties``,
  ``patternProperties``, ``required``, ``items`` (also the draft-4 tuple form), ``prefixItems``,
  ``additionalItems``, ``minItems``, ``maxItems``, ``minLength``/``maxLength`` (code points), ``pattern``
  (a Rust-regex dialect: no look-around, backreferences or ``\\b``), ``format`` for the formats the engine
  knows (probed, see :func:`.engine.format_known`), ``minimum``/``maximum``/``exclusive*`` (numeric and draft-4
  boolean forms), ``multipleOf``; ``minProperties``/``maxProperties`` only where every listed property is
  required (guardrail keeps them only where the node also merges no other schema);
- ``oneOf`` only with ``coerce_one_of`` (compiled as ``anyOf``): guardrail sets it and reports ``oneOf`` as
  *lowered*; that exactly one branch matches is checked after parsing;
- refused ("Unimplemented keys"): ``not``, ``if``/``then``/``else``, ``uniqueItems``, ``contains`` (and
  ``min/maxContains``), ``dependentRequired``, ``dependentSchemas``, ``dependencies``, ``propertyNames``,
  ``unevaluated*``, ``$dynamicRef``, ``$recursiveRef``; unknown formats and regexes it cannot parse are errors.

:func:`~guardrail.local.lowering.prepare.prepare` builds the copy sent to the engine. Refused keywords are removed
from the copy (each one only removes a constraint, so the looser grammar still allows every valid instance) and
reported ``post_validated``: guardrail validates the parsed value against the original contract after decoding. So
are regexes the engine cannot parse (probed one by one, :func:`.engine.regex_problem`), ``minProperties``/
``maxProperties`` where the engine cannot count keys, and length bounds above :data:`.engine.LONG_WITH_REGEX` next
to a pattern (measured: the engine then refuses valid strings). Objects are closed (``additionalProperties:
false`` added, reported *lowered*) where that cannot clash with another schema the engine intersects them with.
Before draft 2019-09 keywords next to a ``$ref`` are ignored by validators: they are removed (*lowered*). Numbers
get engine bounds that hold for the value the text parses to, a finite range where the contract has none
(*lowered*), and no bound the engine cannot compile or would round (see :func:`.numbers.number_bounds`); the date and
time formats the engine checks with a looser regex are *lowered* (:data:`.engine.LOOSE_FORMATS`). References are
rewritten to percent-encoded JSON pointers from the root (the engine refuses non-ASCII fragments and follows
``$id`` bases guardrail does not), and references nothing can resolve are *rejected*. Keys that are not JSON
Schema keywords are dropped from the copy without an entry (they constrain nothing). Walks use explicit stacks;
the input is never mutated.
"""

#: Nothing here is for users: :mod:`guardrail.local.grammar` imports the submodules it needs.
__all__: list[str] = []
