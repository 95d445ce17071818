"""What a check found: per partitioner the verdict, the first wrong device and element, the
first instruction that diverged, the collective cost and the lint's findings (hints as
PartitionSpecs). Prints well in a terminal (str) and in a notebook (_repr_html_)."""

from __future__ import annotations

import dataclasses
import html
from typing import Any, Dict, List, Optional


@dataclasses.dataclass
class Cost:
  """Collective cost under spmdcheck's alpha-beta model (max over devices)."""
  collectives: int = 0
  collective_permutes: int = 0
  max_recv_bytes: int = 0
  max_send_bytes: int = 0

  @classmethod
  def from_json(cls, value: Optional[Dict[str, Any]]) -> Optional["Cost"]:
    if not value:
      return None
    return cls(**{f.name: int(value.get(f.name, 0)) for f in dataclasses.fields(cls)})

  def __str__(self) -> str:
    return (f"{self.collectives} collective(s) ({self.collective_permutes} collective-permute), "
            f"max {self.max_recv_bytes} B received / {self.max_send_bytes} B sent per device")


@dataclasses.dataclass
class Finding:
  """One lint finding: a chain of collectives a cheaper one replaces (`proved`, `unproven`) or
  that does not compute what its shardings claim (`incorrect`)."""
  status: str
  rule: str
  message: str
  instructions: List[str]
  cost_before: Optional[Cost]
  cost_after: Optional[Cost]
  value: Optional[str] = None            # The value whose sharding to change (its HLO name).
  sharding: Optional[str] = None         # Its sharding now (HloSharding text).
  better_sharding: Optional[str] = None  # The sharding the cheaper chain uses.
  hint: Any = None                       # better_sharding as a jax PartitionSpec, when one exists.
  hint_text: Optional[str] = None        # Its text, P('data', None); or why there is none.
  proposed_hlo: str = ""
  proof: str = ""

  def __str__(self) -> str:
    text = f"[{self.status}] {self.rule}: {self.message}"
    if self.value:
      text += f"\n    hint: constrain {self.value} to {self.hint_text or self.better_sharding}"
    return text


@dataclasses.dataclass
class PartitionerResult:
  """The check of one partitioner (`xla` is GSPMD, `shardy`, `reference`)."""
  partitioner: str
  verdict: str  # holds | fails | unknown
  message: str
  finding: Optional[str]
  first_wrong_device: Optional[int]
  first_wrong_element: Optional[Dict[str, Any]]
  first_divergence: Optional[Dict[str, Any]]
  wrong_devices: List[int]
  cost: Optional[Cost]
  xla_end_to_end: Optional[Dict[str, Any]]
  reproduce: str
  oracle_text: str
  findings: List[Finding] = dataclasses.field(default_factory=list)
  raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

  @property
  def holds(self) -> bool:
    return self.verdict == "holds"

  @classmethod
  def from_json(cls, j: Dict[str, Any]) -> "PartitionerResult":
    return cls(partitioner=j.get("partitioner", ""), verdict=j.get("verdict", "unknown"),
               message=j.get("message", ""), finding=j.get("finding"),
               first_wrong_device=j.get("first_wrong_device"),
               first_wrong_element=j.get("first_wrong_element"),
               first_divergence=j.get("first_divergence"),
               wrong_devices=list(j.get("wrong_devices") or []),
               cost=Cost.from_json(j.get("cost")), xla_end_to_end=j.get("xla_end_to_end"),
               reproduce=j.get("reproduce", ""),
               oracle_text=(j.get("oracle") or {}).get("text", ""), raw=j)


def _name(partitioner: str) -> str:
  return {"xla": "GSPMD (xla)", "gspmd": "GSPMD (xla)"}.get(partitioner, partitioner)


@dataclasses.dataclass
class Report:
  """spmdcheck.check's answer. `holds` is true when every partitioner's verdict holds."""
  results: List[PartitionerResult]
  hlo_path: str
  workdir: str
  html_path: Optional[str] = None

  @property
  def holds(self) -> bool:
    return bool(self.results) and all(r.holds for r in self.results)

  @property
  def verdict(self) -> str:
    verdicts = [r.verdict for r in self.results]
    if "fails" in verdicts:
      return "fails"
    return "holds" if verdicts and all(v == "holds" for v in verdicts) else "unknown"

  def _first(self, attribute: str):
    for r in self.results:
      value = getattr(r, attribute)
      if value is not None:
        return value
    return None

  @property
  def first_wrong_device(self) -> Optional[int]:
    return self._first("first_wrong_device")

  @property
  def first_divergence(self) -> Optional[Dict[str, Any]]:
    return self._first("first_divergence")

  @property
  def cost(self):
    """The partitioned program's collective cost; a dict by partitioner when several ran."""
    if len(self.results) == 1:
      return self.results[0].cost
    return {r.partitioner: r.cost for r in self.results}

  @property
  def findings(self) -> List[Finding]:
    return [f for r in self.results for f in r.findings]

  def __getitem__(self, partitioner: str) -> PartitionerResult:
    for r in self.results:
      if r.partitioner == partitioner or _name(r.partitioner) == partitioner:
        return r
    raise KeyError(partitioner)

  def __str__(self) -> str:
    lines = [f"spmdcheck: {self.verdict} ({self.hlo_path})"]
    for r in self.results:
      lines.append(f"  {_name(r.partitioner)}: {r.verdict}" +
                   (f" ({r.finding})" if r.finding else ""))
      if r.message and not r.holds:
        lines.append(f"    {r.message}")
      if r.first_wrong_device is not None:
        e = r.first_wrong_element or {}
        lines.append(f"    first wrong device: {r.first_wrong_device} at "
                     f"{e.get('global_index')}: expected {e.get('expected')}, "
                     f"got {e.get('actual')}")
      if r.first_divergence:
        d = r.first_divergence
        lines.append(f"    first divergence: {d.get('instruction')} should hold "
                     f"{d.get('holds')} under {d.get('sharding')}")
      if r.xla_end_to_end:
        lines.append(f"    XLA end to end: {r.xla_end_to_end.get('verdict')}")
      if r.cost is not None:
        lines.append(f"    cost: {r.cost}")
      for f in r.findings:
        lines.append("    " + str(f).replace("\n", "\n    "))
      if r.reproduce:
        lines.append(f"    reproduce: {r.reproduce}")
    return "\n".join(lines)

  def __repr__(self) -> str:
    return f"<spmdcheck.Report {self.verdict}: " + ", ".join(
        f"{r.partitioner}={r.verdict}" for r in self.results) + ">"

  def _repr_html_(self) -> str:
    colours = {"holds": "#c8ecc8", "fails": "#f6c1c1", "unknown": "#f3e3b3"}
    rows = []
    for r in self.results:
      detail = []
      if r.first_wrong_device is not None:
        e = r.first_wrong_element or {}
        detail.append(f"first wrong device <b>{r.first_wrong_device}</b> at "
                      f"{html.escape(str(e.get('global_index')))}: expected "
                      f"{html.escape(str(e.get('expected')))}, got "
                      f"{html.escape(str(e.get('actual')))}")
      if r.first_divergence:
        d = r.first_divergence
        detail.append(f"first divergence <code>{html.escape(str(d.get('instruction')))}</code>"
                      f" under <code>{html.escape(str(d.get('sharding')))}</code>")
      if r.message and not r.holds:
        detail.append(html.escape(r.message))
      for f in r.findings:
        hint = (f" &rarr; constrain <code>{html.escape(f.value)}</code> to "
                f"<code>{html.escape(f.hint_text or f.better_sharding or '')}</code>"
                if f.value else "")
        detail.append(f"<i>{html.escape(f.status)}</i> {html.escape(f.message)}{hint}")
      rows.append(
          f"<tr><td>{html.escape(_name(r.partitioner))}</td>"
          f"<td style='background:{colours.get(r.verdict, '#eee')}'><b>{r.verdict}</b></td>"
          f"<td>{html.escape(str(r.cost)) if r.cost else ''}</td>"
          f"<td>{'<br>'.join(detail)}</td></tr>")
    return ("<table><tr><th>partitioner</th><th>verdict</th><th>cost</th><th>details</th></tr>"
            + "".join(rows) + "</table>" +
            (f"<p>page: {html.escape(self.html_path)}</p>" if self.html_path else ""))
