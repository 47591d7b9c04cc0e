"""Korean particles after code (issue #34): 이/가, 을/를, 은/는, 과/와 and (으)로 chosen from how a value is read.

A Korean particle depends on the sound it follows: 이, 을, 은, 과 and 으로 after a
final consonant (받침), 가, 를, 는, 와 and 로 after a vowel, and 로 after ㄹ too; so do
the copula's 이라, 이나, 이었, 이며 (라, 나, 였, 며 after a vowel).
A translator can't know the sound of a value that fills a placeholder, so a Korean
entry writes the conventional pair right after it, ``{file}을(를)``, ``{name}이(가)``,
``{x}은(는)``, ``{x}(으)로``, ``{a}과(와)``, ``{x}(이)라고``, ``{x}(이)나``, ``{x}(이)었는데``,
``{x}(이)며``, and :func:`fill` (which :func:`kata.i18n.say`
uses) puts in the one that fits the value it is filled with. A pair may be written
after closing marks that follow the placeholder (`` `{name}`이(가) ``, ``{name}()을(를)``,
``[{i}]은(는)``); anywhere else (after literal text) the translation chooses the
particle itself, and ``tests/selftest/test_i18n.py`` fails on a pair left there.

How a value is read (:func:`ending`), from its last readable character, as a Korean
reader says it:

- closing brackets, quotes, backticks, an empty call's ``()``, trailing dots, tildes,
  slashes and underscores are not read (``'cpu'``, ``plot()``, ``devices.py.~1~``);
- Hangul: its final consonant, if any;
- digits as read in Sino-Korean: 0 영, 1 일, 3 삼, 6 육, 7 칠, 8 팔 end in a consonant (1, 7 and
  8 in ㄹ), 2 이, 4 사, 5 오, 9 구 in a vowel (10 십, 100 백, 1000 천 end in 0: a consonant too);
- a single Latin letter, a word without a vowel or one of three capitals or fewer (``CPU``, ``SGD``,
  ``mps``, ``png``), by its letters' names: l 엘, m 엠, n 엔, r 알 end in a consonant (l and r in ㄹ),
  every other letter in a vowel;
- a word (the last one of ``snake_case``, ``camelCase`` or ``dotted.names``; ``NAME``, ``SMILING``)
  as it is said as a Korean loanword: ``model`` 모델, ``tuple`` 튜플, ``Adam`` 아담, ``train`` 트레인, ``string``
  스트링, ``step`` 스텝, ``plot`` 플롯, ``stack`` 스택, ``dtype`` 디타입 end in a consonant;
  ``device`` 디바이스, ``tensor`` 텐서, ``Error`` 에러, ``history`` 히스토리, ``float`` 플로트,
  ``dict`` 딕트, ``show`` 쇼 in a vowel (:func:`_word`);
- ``%`` 퍼센트 and ``+`` 플러스 end in a vowel.

Nothing here imports anything but the standard library.
"""

from __future__ import annotations

import re
import string

__all__ = ["CONSONANT", "PAIRS", "RIEUL", "VOWEL", "choose", "ending", "fill", "unresolved"]

VOWEL, CONSONANT, RIEUL = "vowel", "consonant", "rieul"   # RIEUL: a final ㄹ (a consonant, but 로 follows it)

# Each conventional pair, as a translator writes it: (after a consonant, after a vowel); (으)로 is 로 after ㄹ too.
PAIRS = {"이(가)": ("이", "가"), "가(이)": ("이", "가"), "을(를)": ("을", "를"), "를(을)": ("을", "를"),
         "은(는)": ("은", "는"), "는(은)": ("은", "는"), "과(와)": ("과", "와"), "와(과)": ("과", "와"),
         "(으)로": ("으로", "로"), "(이)라": ("이라", "라"), "(이)나": ("이나", "나"), "(이)었": ("이었", "였"),
         "(이)며": ("이며", "며")}
PAIR = re.compile("|".join(re.escape(p) for p in PAIRS))
# What may stand between a placeholder and its pair, unread: closing marks, an empty call's ().
UNREAD = ")]}>'\"`’”»」』"
TAIL = re.compile(r"(?:[" + re.escape(UNREAD) + r"]|\(\))*")

_SKIPPED = set(UNREAD) | set("([{<‘“«「『.…~/_,;:!? \t\n")
_DIGITS = {"0": CONSONANT, "1": RIEUL, "2": VOWEL, "3": CONSONANT, "4": VOWEL, "5": VOWEL, "6": CONSONANT,
           "7": RIEUL, "8": RIEUL, "9": VOWEL}
_LETTERS = {"l": RIEUL, "m": CONSONANT, "n": CONSONANT, "r": RIEUL}   # 엘 엠 엔 알; every other letter's name: a vowel
_SYMBOLS = {"%": VOWEL, "+": VOWEL}
_VOWELS = set("aeiou")
# Words a rule below would read otherwise (its loanword's last sound).
_WORDS = {"check": VOWEL, "readme": VOWEL, "sleep": CONSONANT, "keep": CONSONANT, "bit": VOWEL, "exit": VOWEL}


def _hangul(c: str) -> str | None:
    code = ord(c) - 0xAC00
    if 0 <= code < 11172:
        final = code % 28
        return VOWEL if final == 0 else RIEUL if final == 8 else CONSONANT
    if "ㄱ" <= c <= "ㅎ":   # a consonant alone (compatibility jamo)
        return RIEUL if c == "ㄹ" else CONSONANT
    if "ㅏ" <= c <= "ㅣ":
        return VOWEL
    return None


def _word(word: str) -> str:
    """How an English word of code ends when said as a Korean loanword."""
    w = word.lower()
    if len(w) == 1 or word.isupper() and len(w) < 4 or not (_VOWELS & set(w)):
        return _LETTERS.get(w[-1], VOWEL)           # by its letters' names: CPU 씨피유, SGD, mps, str 에스티알
    if w in _WORDS:
        return _WORDS[w]
    if w.endswith("type"):
        return CONSONANT                             # type, dtype: 타입
    last, before = w[-1], w[-2]
    if last == "e":                                  # a silent e: the consonant before it is the last sound
        return {"l": RIEUL, "m": CONSONANT, "n": CONSONANT}.get(before, VOWEL)   # file, name, line; device, state
    if last == "l":
        return RIEUL                                 # model, pool, eval
    if last in "mn":
        return CONSONANT                             # Adam, item, train, json
    if w.endswith("ng"):
        return CONSONANT                             # string, padding: 스트링
    short = before in _VOWELS and (len(w) < 3 or w[-3] not in _VOWELS)   # one vowel before the last letter
    if last in "pb" and short or w.endswith("up"):
        return CONSONANT                             # step, map, zip; setup, group; lib, job
    if w.endswith("ck") or w.endswith("ook"):
        return CONSONANT                             # stack, block, hook
    if last == "c" and before in _VOWELS:
        return CONSONANT                             # spec, exec, doc (sync, func: 싱크)
    if last == "t" and (short or w.endswith("put") or w.endswith("out")):
        return CONSONANT                             # plot, split, dataset, input; float, list, dict: 트
    return VOWEL                                     # tensor, error, history, loss, device's x, show, epoch, grad


def ending(text: str) -> str | None:
    """How ``text`` ends when read aloud in Korean: :data:`VOWEL`, :data:`CONSONANT`, :data:`RIEUL`, or None when
    nothing in it is read (see the module's docstring)."""
    i = len(text)
    while i > 0:
        c = text[i - 1]
        if c in _SKIPPED:
            i -= 1
            continue
        if c.isascii() and c.isalpha():
            start = i
            while start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
                start -= 1
            letters = text[start:i]
            parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", letters)   # camelCase, ReLU, MaxPool
            return _word(parts[-1] if parts else letters)
        if c in _DIGITS:
            return _DIGITS[c]
        found = _hangul(c)
        if found is not None:
            return found
        if c in _SYMBOLS:
            return _SYMBOLS[c]
        i -= 1          # a mark no one reads aloud (=, -, *, #, an emoji): what comes before it
    return None


def choose(pair: str, text: str) -> str:
    """The particle of ``pair`` (one of :data:`PAIRS`) that follows ``text``; the pair itself when nothing in
    ``text`` is read."""
    sound = ending(text)
    if sound is None:
        return pair
    after_consonant, after_vowel = PAIRS[pair]
    if pair == "(으)로":
        return after_consonant if sound == CONSONANT else after_vowel
    return after_vowel if sound == VOWEL else after_consonant


def _pieces(template: str):
    """``template``'s literal texts and fields (string.Formatter's parse); a text that is no template: one
    literal."""
    try:
        return list(string.Formatter().parse(template))
    except ValueError:
        return [(template, None, None, None)]


def fill(template: str, /, **values) -> str:
    """``template.format(**values)``, with each conventional pair written right after a placeholder (and
    closing marks, :data:`TAIL`) made the particle that fits the value it was filled with."""
    if not PAIR.search(template):
        return template.format(**values)
    out, before = [], None          # before: the last field's text, while the literal after it is read
    for literal, field, spec, conversion in string.Formatter().parse(template):
        if before is not None and literal:
            tail = TAIL.match(literal).group()
            pair = PAIR.match(literal, len(tail))
            if pair:
                literal = tail + choose(pair.group(), before + tail) + literal[pair.end():]
        out.append(literal)
        before = None
        if field is not None:
            one = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            before = one.format(**values)
            out.append(before)
    return "".join(out)


def unresolved(template: str) -> list[str]:
    """The pairs of ``template`` that :func:`fill` leaves as written: those no placeholder (and its closing
    marks) comes right before; a text that is not a template: every pair in it."""
    found, after_field = [], False
    for literal, field, _spec, _conversion in _pieces(template):
        start = 0
        if after_field and literal:
            tail = TAIL.match(literal).group()
            pair = PAIR.match(literal, len(tail))
            start = pair.end() if pair else 0
        found += PAIR.findall(literal, start)
        after_field = field is not None
    return found
