"""`kata lang LANG`: switch a learner's copy to a language, keeping their code (issue #21).

To be written: rewrites each exercises/NAME.py's docstrings, comments and stub
messages in LANG (kata.i18n.translate_stub) and records the choice in the
checkout's .kata-lang (kata.i18n.LANG_FILE), so the checks speak LANG too.
"""

from __future__ import annotations

HELP = "switch your copy (stubs, messages, hints) to a language: en or ko; your code is kept"


def add_parser(sub):
    p = sub.add_parser("lang", help=HELP, description=HELP)
    p.add_argument("language", choices=("en", "ko"))
    return p


def run(args) -> int:
    raise NotImplementedError("kata lang: to be written (issue #21)")
