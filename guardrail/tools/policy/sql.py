"""SQL arguments: is a model-proposed statement of a kind (and on tables) the tool may run?

:func:`check_sql` parses the value with sqlglot and returns ``None`` when it is exactly one statement
whose every part is an allowed kind, else a short reason. The statement is judged as a tree, so what a
statement hides is judged too: CTEs (``WITH d AS (DELETE ... RETURNING *) SELECT ...``), subqueries,
set-operation branches and ``INSERT ... SELECT``.

Rules, in order (the first failing one is the reason):

1. only ``str`` of at most :data:`MAX_SQL_CHARS` (64 KiB) characters (longer values are not parsed);
2. lexical traps are denied before parsing, anywhere in the text, string literals included (false
   positives are accepted): control characters other than tab, LF and CRLF (a lone CR ends a ``--``
   comment for PostgreSQL but not for MySQL or SQLite), format characters, non-ASCII spaces and line
   separators; backslashes (whether ``\\'`` ends a string depends on the server and its settings:
   MySQL, ``NO_BACKSLASH_ESCAPES``, ``standard_conforming_strings``); MySQL executable comments
   ``/*! ... */`` and MariaDB's ``/*M! ... */`` (the server runs what they contain); ``--`` followed by
   anything but whitespace (MySQL reads ``--1`` as two minus signs, not a comment); PostgreSQL dollar
   quotes ``$tag$`` (other servers do not read them as strings);
3. the text must tokenize and parse under ``dialect`` (any sqlglot error denies); nested comments
   (``/* /* */ */``: PostgreSQL nests them, MySQL and SQLite do not) are denied; and the text must read
   as one statement to every lexer in :data:`SEPARATION_DIALECTS` too (generic, MySQL, PostgreSQL,
   SQLite, T-SQL), so a ``;`` that the chosen dialect hides in a ``#`` comment or a backtick identifier
   but another server would see is denied;
4. exactly one statement: empty statements (``;;``, a trailing ``; -- comment``) are ignored, so a single
   trailing ``;`` is fine and ``SELECT 1; DROP TABLE x`` is two statements and denied;
5. every node of the tree: side effects that no ``allow`` can permit (:data:`ALWAYS_DENIED`: sqlglot
   ``Command`` passthrough such as ``EXEC``/``CALL``/``DO``/``VACUUM``, ``COPY``, ``ATTACH``, ``LOAD
   DATA``, ``SELECT ... INTO``, ``PRAGMA``, ...) are denied; every statement node must be of an allowed
   kind (:data:`STATEMENT_KINDS`; ``SELECT ... FOR UPDATE/SHARE`` takes row locks and counts as
   ``"update"``; the ``INSERT``/``UPDATE`` actions of a ``MERGE`` count as their own kinds); table names
   with a ``.``, ``/`` or ``:`` inside one part are denied (DuckDB reads ``FROM 'data.csv'`` or
   ``FROM 's3://...'`` as a file); every function called must be on the **allow-list** of the dialect
   (:func:`allowed_functions`): by default the pure scalar and aggregate functions of
   :data:`PURE_FUNCTIONS` plus the dialect's own (:data:`DIALECT_FUNCTIONS`), and whatever the policy's
   ``functions`` adds. Anything else (file access, advisory locks, replication and WAL control,
   statistics resets, sleeping, sequences, user-defined functions, SQL in a string) is denied without
   having to be known. Names are compared lower-case with ``_`` ignored, as written for calls sqlglot
   does not know and as sqlglot names the others (``SUBSTR`` is ``substring``); a schema-qualified call
   (``pg_catalog.pg_read_file``) is judged by its last part. The database role the tool connects as
   stays the real boundary;
6. with ``tables``, every table reference must be listed: names compared part by part (schema-qualified
   references in full: ``public.users`` matches only the entry ``public.users``), unquoted parts
   case-insensitively, quoted parts exactly as written in the entry; table-valued functions
   (``FROM generate_series(...)``, ``FROM read_csv(...)``) are denied; references to a CTE are exempt
   only where that CTE is in scope, spelled and quoted the same, and only in statements without
   data-modifying parts.

``allow`` holds kind names (:data:`STATEMENT_KINDS` values, any case); an unknown name, an unknown
``dialect``, a ``str`` passed as a collection or a malformed ``tables`` entry raise :class:`ValueError`.

Limits: ``dialect`` must be the server's. Statement separation is checked under several lexers, but
the *contents* of the statement are judged under ``dialect`` only: with the wrong dialect, text one
server reads as a comment (MySQL's ``#``) can be an operator and a subquery to another. sqlglot logs a
warning when it falls back to ``Command``; that statement is then denied. Parsing is roughly linear:
about a second for 64 KiB on a slow core, two when a ``;`` inside the text makes the other four lexers
run; deeply nested input is denied when the parser runs out of recursion.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect

from guardrail.errors import ConfigError
from guardrail.tools.policy.options import string_set

__all__ = [
    "ALWAYS_DENIED",
    "DIALECT_FUNCTIONS",
    "KNOWN_KINDS",
    "MAX_SQL_CHARS",
    "PURE_FUNCTIONS",
    "SEPARATION_DIALECTS",
    "STATEMENT_KINDS",
    "allowed_functions",
    "check_sql",
]

#: Longest SQL text accepted; longer values are denied without being parsed.
MAX_SQL_CHARS = 65536
#: Lexers under which the text must also read as one statement, whatever ``dialect`` says.
SEPARATION_DIALECTS: tuple[str | None, ...] = (None, "mysql", "postgres", "sqlite", "tsql")


def _classes(*names: str) -> tuple[type[exp.Expr], ...]:
    """The sqlglot expression classes among ``names`` that this sqlglot version has."""
    found = (getattr(exp, name, None) for name in names)
    return tuple(cls for cls in found if isinstance(cls, type) and issubclass(cls, exp.Expr))


def _kinds(table: dict[str, str]) -> dict[type[exp.Expr], str]:
    return {cls: kind for name, kind in table.items() for cls in _classes(name)}


#: sqlglot statement classes and the kind name ``allow`` uses for them (subclasses included).
STATEMENT_KINDS: dict[type[exp.Expr], str] = _kinds(
    {
        "Select": "select",
        "SetOperation": "select",  # UNION, INTERSECT, EXCEPT
        "Insert": "insert",
        "Update": "update",
        "Lock": "update",  # SELECT ... FOR UPDATE / FOR SHARE
        "Delete": "delete",
        "Merge": "merge",
        "Create": "create",
        "Drop": "drop",
        "Alter": "alter",
        "TruncateTable": "truncate",
        "Show": "show",
        "Describe": "describe",
        "Use": "use",
        "Set": "set",
        "Transaction": "transaction",
        "Commit": "transaction",
        "Rollback": "transaction",
        "Grant": "grant",
        "Revoke": "revoke",
        "Analyze": "analyze",
    }
)
KNOWN_KINDS = frozenset(STATEMENT_KINDS.values())

#: Nodes denied whatever ``allow`` says: unparsed passthrough and statements that reach outside the
#: database (files, programs, other databases, extensions) or run code given as a string.
ALWAYS_DENIED: tuple[type[exp.Expr], ...] = _classes(
    "Command",  # EXEC, CALL, DO, VACUUM, LOCK, PREPARE, EXPLAIN (PostgreSQL), REPLACE INTO (MySQL), ...
    "Copy",
    "Attach",
    "Detach",
    "LoadData",
    "Into",  # SELECT ... INTO creates a table or writes variables / files
    "Directory",  # INSERT OVERWRITE DIRECTORY
    "Pragma",
    "Execute",
    "Install",
    "Kill",
    "Export",
    "Put",
    "Get",
    "Cache",
    "Uncache",
    "Refresh",
    "Declare",
    "Summarize",
)

#: Pure scalar and aggregate functions (and function-like syntax) every dialect may call: no side effects,
#: no access outside the query's own rows. Lower-case; ``_`` is ignored when names are compared.
PURE_FUNCTIONS = frozenset(
    {
        # syntax that sqlglot represents as a function
        "case", "cast", "try_cast", "if", "iif", "coalesce", "nullif", "ifnull", "nvl", "decode_case", "extract",
        "collate", "array", "struct", "exists", "and", "or", "xor", "regexp_like", "regexp_i_like",
        "regexp_full_match", "json_extract", "json_extract_scalar", "jsonb_extract", "jsonb_extract_scalar",
        # aggregates and window functions
        "count", "count_if", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "array_agg",
        "stddev", "stddev_pop", "stddev_samp", "variance", "variance_pop", "var_pop", "var_samp", "corr",
        "covar_pop", "covar_samp", "median", "mode", "percentile_cont", "percentile_disc", "any_value",
        "logical_and", "logical_or", "bool_and", "bool_or", "every", "row_number", "rank", "dense_rank",
        "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
        # numbers
        "abs", "sign", "round", "trunc", "ceil", "ceiling", "floor", "sqrt", "power", "pow", "exp", "ln", "log",
        "log10", "log2", "mod", "greatest", "least", "pi", "degrees", "radians", "sin", "cos", "tan", "asin",
        "acos", "atan", "atan2",
        # text
        "length", "char_length", "character_length", "octet_length", "lower", "upper", "initcap", "trim",
        "ltrim", "rtrim", "btrim", "substring", "substr", "left", "right", "pad", "lpad", "rpad", "replace",
        "translate", "reverse", "repeat", "concat", "concat_ws", "str_position", "strpos", "instr", "position",
        "split_part", "ascii", "chr", "char", "unicode", "hex", "regexp_replace", "regexp_substr", "md5",
        "sha", "sha2", "typeof", "format",
        # dates and times (reading the clock is not a side effect)
        "current_date", "current_time", "current_timestamp", "date", "time", "datetime", "date_add", "date_sub",
        "datediff", "date_trunc", "timestamp_trunc", "date_part", "to_char", "time_to_str", "str_to_date",
        "ts_or_ds_to_date", "ts_or_ds_to_timestamp", "unix_to_time",
        # JSON values
        "json_object", "json_array", "json_type", "json_valid", "json_array_length",
    }
)  # fmt: skip

#: Pure functions of one dialect only (``glob`` is a string match to SQLite and a file listing to DuckDB).
DIALECT_FUNCTIONS: dict[str, frozenset[str]] = {
    "sqlite": frozenset({"julianday", "strftime", "unixepoch", "printf", "quote", "glob", "like", "likely",
                         "unlikely"}),
    "postgres": frozenset({"age", "make_date", "make_time", "make_timestamp", "to_date", "to_timestamp", "now",
                           "array_length", "cardinality", "json_extract_path_text", "jsonb_extract_path",
                           "jsonb_extract_path_text", "jsonb_typeof", "json_typeof", "justify_days",
                           "date_bin"}),
    "mysql": frozenset({"now", "date_format", "from_unixtime", "unix_timestamp", "curdate", "curtime",
                        "dayofweek", "dayofmonth", "dayofyear", "month", "year", "week", "hour", "minute",
                        "second", "last_day", "field", "elt", "locate", "mid", "number_to_str"}),
    "duckdb": frozenset({"strftime", "strptime", "epoch", "list_value", "array_length", "regexp_matches"}),
}

_PATH_CHARS = frozenset("./:")
_CONTROL_OK = frozenset("\t\n")
_SEPARATORS = frozenset("\u0085\u2028\u2029")
# Fixed, non-backtracking patterns only: linear on any input.
_TRAPS = (
    (re.compile(r"/\*[Mm]?!"), "MySQL/MariaDB executable comment (/*! */)"),
    (re.compile(r"--[^\s]"), "'--' not followed by whitespace (not a comment for MySQL)"),
    (re.compile(r"\$(?:[^\W\d]\w*)?\$"), "dollar-quoted string ($tag$)"),
)


def _lexical_reason(value: str) -> str | None:
    if "\\" in value:
        return "backslash in SQL (escape rules differ between servers)"
    if not value.isascii():
        for char in value:
            if not char.isascii() and (char in _SEPARATORS or not char.isprintable()):
                return f"non-ASCII control, format or space character U+{ord(char):04X}"
    if not value.isprintable():
        for index, char in enumerate(value):
            if char.isascii() and not char.isprintable() and char not in _CONTROL_OK:
                if char == "\r" and value[index + 1 : index + 2] == "\n":
                    continue
                return "lone carriage return" if char == "\r" else f"control character U+{ord(char):04X}"
    for pattern, reason in _TRAPS:
        if pattern.search(value) is not None:
            return reason
    return None


def _separates(tokens: list[Token]) -> bool:
    """Whether a ``;`` token is followed by anything but more ``;`` (comments are not tokens)."""
    seen_semicolon = False
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            seen_semicolon = True
        elif seen_semicolon:
            return True
    return False


def _separation_reason(value: str, tokens: list[Token], dialect: str | None) -> str | None:
    """A reason if ``value`` reads as several statements to any lexer in :data:`SEPARATION_DIALECTS`.

    This catches what one server reads as a comment, string or identifier and another as code (``#``
    comments, backtick identifiers, bracket identifiers) when the policy's ``dialect`` is not the server's.
    A lexer that fails on the text is skipped: that server would not get past the same spot either.
    """
    if ";" not in value.rstrip().rstrip(";") or _separates(tokens):
        return None  # no lexer can find two statements / the parser will count them and say so
    for other in SEPARATION_DIALECTS:
        if other == dialect:
            continue
        try:
            other_tokens = Dialect.get_or_raise(other).tokenize(value)
        except Exception:  # this lexer cannot read the text at all
            continue
        if _separates(other_tokens):
            return f"reads as several statements to the {other or 'generic'} lexer"
    return None


def _allowed_kinds(allow: object) -> frozenset[str]:
    kinds = frozenset(kind.lower() for kind in string_set(allow, "SQL policy allow"))
    unknown = kinds - KNOWN_KINDS
    if unknown:
        raise ConfigError(f"SQL policy allow has unknown kinds {sorted(unknown)}; known: {sorted(KNOWN_KINDS)}")
    return kinds


def _allowed_tables(tables: object) -> frozenset[tuple[str, ...]] | None:
    if tables is None:
        return None
    entries = set()
    for entry in string_set(tables, "SQL policy tables"):
        parts = tuple(entry.split("."))
        if not 1 <= len(parts) <= 3 or not all(part and part.strip() == part for part in parts):
            raise ConfigError(f"SQL policy tables entry {entry!r} is not [catalog.][schema.]table")
        entries.add(parts)
    return frozenset(entries)


def _dialect(dialect: object) -> Dialect:
    if dialect is not None and not isinstance(dialect, str):
        raise ConfigError(f"SQL policy dialect must be a str or None, not {type(dialect).__name__}")
    try:
        return Dialect.get_or_raise(dialect)
    except ValueError as error:
        raise ConfigError(f"SQL policy dialect {dialect!r}: {error}") from None


def _kind_of(node: exp.Expr) -> str | None:
    for cls in type(node).__mro__:
        kind = STATEMENT_KINDS.get(cls)
        if kind is not None:
            return kind
    return None


def _key(name: str) -> str:
    return name.lower().replace("_", "")


def allowed_functions(dialect: str | None = None, extra: Collection[str] = ()) -> frozenset[str]:
    """The function allow-list of ``dialect`` (:data:`PURE_FUNCTIONS` and :data:`DIALECT_FUNCTIONS`) plus
    ``extra``, as comparison keys (lower-case, ``_`` removed)."""
    given = string_set(extra, "SQL policy functions")
    names = PURE_FUNCTIONS | DIALECT_FUNCTIONS.get(dialect or "", frozenset()) | given
    return frozenset(_key(name) for name in names)


def _function_names(node: exp.Func) -> set[str]:
    """The names a call goes by: as written (calls sqlglot does not know) or as sqlglot names it."""
    if type(node).__name__.startswith("Anonymous"):
        return {_key(node.name)}
    return {_key(node.sql_name()), _key(type(node).__name__)}


def _identifier_key(identifier: exp.Expr) -> tuple[str, bool]:
    return identifier.name, bool(identifier.args.get("quoted"))


def _in_cte_scope(table: exp.Table) -> bool:
    """Whether the unqualified ``table`` names a CTE visible where it stands (scoping as in SQL)."""
    key = _identifier_key(table.this)
    child: exp.Expr = table
    parent = table.parent
    while parent is not None:
        if isinstance(parent, exp.With) and isinstance(child, exp.CTE):
            ctes = list(parent.expressions)
            index = next((i for i, cte in enumerate(ctes) if cte is child), len(ctes))
            visible = ctes[: index + 1] if parent.args.get("recursive") else ctes[:index]
            if any(_identifier_key(cte.args["alias"].this) == key for cte in visible):
                return True
        else:
            with_ = parent.args.get("with_") or parent.args.get("with")
            if (
                isinstance(with_, exp.With)
                and child is not with_
                and any(_identifier_key(cte.args["alias"].this) == key for cte in with_.expressions)
            ):
                return True
        child, parent = parent, parent.parent
    return False


def _table_allowed(table: exp.Table, allowed: frozenset[tuple[str, ...]]) -> bool:
    parts = table.parts
    for entry in allowed:
        if len(entry) == len(parts) and all(
            (part.name == want) if part.args.get("quoted") else (part.name.lower() == want.lower())
            for part, want in zip(parts, entry, strict=True)
        ):
            return True
    return False


def _statement_reason(
    statement: exp.Expr, kinds: frozenset[str], tables: frozenset[tuple[str, ...]] | None, functions: frozenset[str]
) -> str | None:
    root = statement
    while isinstance(root, exp.Subquery | exp.Paren):  # "(SELECT 1)" is a SELECT
        root = root.this
    if _kind_of(root) is None and not isinstance(root, ALWAYS_DENIED):
        return f"unsupported statement ({type(root).__name__})"
    nodes = list(statement.walk())
    modifies = any(_kind_of(node) not in (None, "select") for node in nodes)
    for node in nodes:
        if isinstance(node, ALWAYS_DENIED):
            what = type(node).__name__
            if isinstance(node, exp.Command):
                what = f"Command {str(node.this).split(' ', 1)[0].upper()!r}"
            return f"side effect not allowed: {what}"
        kind = _kind_of(node)
        if kind is not None and kind not in kinds:
            return f"statement kind {kind!r} not allowed"
        if isinstance(node, exp.Func) and not _function_names(node) & functions:
            written = node.name if type(node).__name__.startswith("Anonymous") else node.sql_name()
            return f"function {written.lower()!r} is not on the allow-list"
        if isinstance(node, exp.Table) and any(set(part.name) & _PATH_CHARS for part in node.parts):
            return "table name looks like a file path or URL"  # DuckDB reads FROM 'x.csv' as a file
        if tables is not None and isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                return "table-valued function or expression in FROM"
            if not modifies and len(node.parts) == 1 and _in_cte_scope(node):
                continue
            if not _table_allowed(node, tables):
                return f"table {node.sql()} not allowed"
    return None


def check_sql(
    value: object, *, allow: Collection[str], dialect: str | None = None, tables: Collection[str] | None = None,
    functions: Collection[str] = (),
) -> str | None:
    """``None`` when ``value`` is one SQL statement the policy allows, else the reason (module docs).

    ``functions`` adds names to the dialect's function allow-list. The text is judged as given and must be
    passed to the database unchanged (nothing is rewritten). Raises :class:`ValueError` only for a bad
    policy (``allow``, ``dialect``, ``tables``, ``functions``).
    """
    kinds = _allowed_kinds(allow)
    allowed = allowed_functions(dialect, functions)
    allowed_tables = _allowed_tables(tables)
    parser_dialect = _dialect(dialect)
    if not isinstance(value, str):
        return f"SQL must be a str, not {type(value).__name__}"
    if len(value) > MAX_SQL_CHARS:
        return f"SQL longer than {MAX_SQL_CHARS} characters"
    reason = _lexical_reason(value)
    if reason is not None:
        return reason
    try:
        tokens = parser_dialect.tokenize(value)
        if any("/*" in comment or "*/" in comment for token in tokens for comment in token.comments):
            return "nested comment"
        reason = _separation_reason(value, tokens, dialect)
        if reason is not None:
            return reason
        parsed = parser_dialect.parser().parse(tokens, value)
    except Exception as error:  # any sqlglot failure (ParseError, TokenError, RecursionError, ...) denies
        return f"does not parse as {dialect or 'generic'} SQL ({type(error).__name__})"
    statements = [node for node in parsed if node is not None and not isinstance(node, exp.Semicolon)]
    if len(statements) != 1:
        return f"expected exactly one statement, found {len(statements)}"
    try:
        return _statement_reason(statements[0], kinds, allowed_tables, allowed)
    except Exception as error:  # a tree shape the rules did not foresee is denied, never raised
        return f"statement could not be judged ({type(error).__name__})"
