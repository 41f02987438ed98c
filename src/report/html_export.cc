#include "report/html_export.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/folded_export.h"
#include "report/frame_names.h"
#include "report/json_text.h"
#include "report/site_format.h"
#include "report/units.h"

namespace leakscope::report {
namespace {

// The flame graph's frames, outermost at the root (node 0): live bytes of every stack through
// each, and the part of them in leak groups. Nodes name their frame by id and find their children
// through one map, so a graph of a million frames costs tens of bytes a frame.
class FlameTree {
 public:
  FlameTree() { nodes_.push_back(Node{}); }

  void add(const std::vector<uint32_t>& names, int64_t bytes, int64_t leaked) {
    uint32_t node = 0;
    count(node, bytes, leaked);
    for (uint32_t name : names) {
      auto [found, inserted] = children_.emplace(uint64_t{node} << 32 | name, static_cast<uint32_t>(nodes_.size()));
      if (inserted) {
        nodes_.push_back(Node{name, 0, 0, 0, nodes_[node].first_child});
        nodes_[node].first_child = found->second;
      }
      node = found->second;
      count(node, bytes, leaked);
    }
  }

  int64_t bytes() const { return nodes_[0].bytes; }

  // json() is the graph from the root down, the frames holding fewer than `least` bytes left out
  // (their bytes stay in their caller's figure); children in their names' order.
  nlohmann::json json(const FrameNames& names, int64_t least) const { return json_of(0, "all", names, least); }

 private:
  struct Node {
    uint32_t name = 0;
    int64_t bytes = 0;
    int64_t leaked = 0;
    uint32_t first_child = 0;  // 0: none (the root is no one's child)
    uint32_t next_sibling = 0;
  };

  void count(uint32_t node, int64_t bytes, int64_t leaked) {
    nodes_[node].bytes += bytes;
    nodes_[node].leaked += leaked;
  }

  nlohmann::json json_of(uint32_t node, const std::string& name, const FrameNames& names, int64_t least) const {
    std::vector<uint32_t> shown;
    for (uint32_t child = nodes_[node].first_child; child != 0; child = nodes_[child].next_sibling) {
      if (nodes_[child].bytes >= least) shown.push_back(child);
    }
    std::sort(shown.begin(), shown.end(), [&](uint32_t a, uint32_t b) { return names.name(nodes_[a].name) < names.name(nodes_[b].name); });
    nlohmann::json children = nlohmann::json::array();
    for (uint32_t child : shown) children.push_back(json_of(child, names.name(nodes_[child].name), names, least));
    return {{"n", name}, {"v", nodes_[node].bytes}, {"l", nodes_[node].leaked}, {"c", children}};
  }

  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> children_;  // by parent << 32 | name
};

std::string html_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

nlohmann::json points_json(const std::vector<SeriesPoint>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const SeriesPoint& point : points) out.push_back({point.time_s, point.value});
  return out;
}

// The page's script and style: drawn in the browser from the data above it, with no library.
constexpr const char* kPage = R"PAGE(<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px}
.meta{color:#555} table{border-collapse:collapse} td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} .leak{color:#b00;font-weight:600}
.cache{color:#06c} .startup{color:#777} .unknown{color:#a60}
#flame text{font-size:11px;pointer-events:none} #flame rect{stroke:#fff;cursor:pointer}
#legend span{margin-right:14px}
</style>
<h1 id="title"></h1><div class="meta" id="meta"></div>
<h2>Live bytes by stack (click a frame to zoom, the top row to zoom out)</h2><svg id="flame" width="1200"></svg>
<h2>Memory over time</h2><svg id="chart" width="1200" height="260"></svg><div id="legend"></div>
<h2>Groups</h2><table id="groups"><tr><th>verdict</th><th>confidence</th><th>live</th><th>growth/min</th>
<th>leak entropy</th><th>first user frame</th><th>why</th></tr></table>
<script>
const D = JSON.parse(document.getElementById('data').textContent);
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function bytes(v) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0; let x = Math.abs(v);
  while (x >= 1024 && i < 4) { x /= 1024; i++; }
  return (v < 0 ? '-' : '') + (i ? x.toFixed(2) : x) + ' ' + u[i];
}
document.getElementById('title').textContent = 'leakscope: ' + D.run.exe + ' (pid ' + D.run.pid + ')';
document.getElementById('meta').textContent = D.run.judged;
const ROW = 18, WIDTH = 1200;
function depth(n) { let d = 0; for (const c of n.c) d = Math.max(d, depth(c)); return d + 1; }
function drawFlame(root, path) {
  const svg = document.getElementById('flame');
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute('height', (depth(root) + path.length) * ROW + 4);
  let y = 0;
  for (const up of path) {  // the callers of the zoomed frame, full width
    const g = el('g', {}, svg);
    el('rect', {x: 0, y: y, width: WIDTH, height: ROW - 1, fill: '#ddd'}, g);
    el('title', {}, g, up.n + ': ' + bytes(up.v));
    el('text', {x: 4, y: y + 13}, g, up.n);
    g.onclick = () => drawFlame(up, path.slice(0, path.indexOf(up)));
    y += ROW;
  }
  (function draw(node, x, w, y, trail) {
    if (w < 0.5) return;
    const share = node.v > 0 ? node.l / node.v : 0;
    const g = el('g', {class: share > 0.5 ? 'leaking' : 'live'}, svg);
    const hue = share > 0.5 ? 0 : 30 + 20 * (1 - share);
    el('rect', {x: x, y: y, width: w, height: ROW - 1, fill: 'hsl(' + hue + ',' + (55 + 35 * share) + '%,' + (70 - 15 * share) + '%)'}, g);
    el('title', {}, g, node.n + ': ' + bytes(node.v) + (node.l ? ', leaking ' + bytes(node.l) : ''));
    if (w > 30) el('text', {x: x + 3, y: y + 13}, g, node.n.length * 6.5 > w ? node.n.slice(0, Math.floor(w / 6.5) - 1) + '…' : node.n);
    g.onclick = () => drawFlame(node, trail);
    let cx = x;
    for (const c of node.c) {
      const cw = node.v > 0 ? w * c.v / node.v : 0;
      draw(c, cx, cw, y + ROW, trail.concat([node]));
      cx += cw;
    }
  })(root, 0, WIDTH, y, path);
}
drawFlame(D.flame, []);
(function drawChart() {
  const svg = document.getElementById('chart'), H = 220, L = 70, R = 10;
  const series = [{name: 'RSS', color: '#444', points: D.rss}, {name: 'tracked', color: '#2a7', points: D.tracked}];
  const colors = ['#c00', '#e60', '#a0a', '#06c', '#0aa', '#880'];
  D.groups.filter(g => g.series.length).slice(0, 6).forEach((g, i) => series.push({name: g.verdict + ': ' + g.name, color: colors[i], points: g.series}));
  let tmax = 0, vmax = 1;
  for (const s of series) for (const [t, v] of s.points) { tmax = Math.max(tmax, t); vmax = Math.max(vmax, v); }
  if (tmax <= 0) {  // one snapshot: no time to draw
    el('text', {x: L, y: 40, 'font-size': 13}, svg, 'one snapshot only: the run was too short to show memory over time');
    return;
  }
  const X = t => L + (WIDTH - L - R) * t / tmax, Y = v => 10 + H - H * v / vmax;
  el('line', {x1: L, y1: Y(0), x2: WIDTH - R, y2: Y(0), stroke: '#999'}, svg);
  for (let k = 0; k <= 4; k++) {
    el('text', {x: 2, y: Y(vmax * k / 4) + 4, 'font-size': 11}, svg, bytes(vmax * k / 4));
    el('text', {x: X(tmax * k / 4) - 10, y: H + 30, 'font-size': 11}, svg, (tmax * k / 4).toFixed(1) + ' s');
  }
  const legend = document.getElementById('legend');
  for (const s of series) {
    if (!s.points.length) continue;
    el('polyline', {points: s.points.map(([t, v]) => X(t) + ',' + Y(v)).join(' '), fill: 'none', stroke: s.color, 'stroke-width': 1.5}, svg);
    const item = document.createElement('span'); item.style.color = s.color; item.textContent = '— ' + s.name; legend.appendChild(item);
  }
})();
(function fillTable() {
  const table = document.getElementById('groups');
  for (const g of D.groups) {
    const row = table.insertRow();
    const cells = [[g.verdict, g.verdict], [g.confidence.toFixed(2), 'num'], [bytes(g.live_bytes), 'num'],
                   [(g.growth >= 0 ? '+' : '') + bytes(g.growth), 'num'], [g.leak_entropy.toFixed(2), 'num'], [g.name, ''], [g.reason, '']];
    for (const [text, cls] of cells) { const c = row.insertCell(); c.textContent = text; if (cls) c.className = cls; }
  }
})();
</script>
)PAGE";

}  // namespace

void write_html_report(RunAnalysis& analysis, std::ostream& out, size_t top) {
  FrameNames names(flame_frame_name);
  FlameTree flame;
  for (const SiteReport& site : analysis.sites) {
    int64_t bytes = analysis.own_live_bytes(site);
    if (bytes <= 0) continue;
    bool leak = analysis.groups[site.group].verdict == Verdict::kLeak;
    flame.add(flame_stack(analysis, site, names), bytes, leak ? bytes : 0);
  }
  nlohmann::json data;
  const ProcessInfo& process = analysis.state.process();
  data["run"] = {{"exe", process.exe},
                 {"pid", process.pid},
                 {"judged", fmt::format("judged at snapshot {} of {}, {} into the run ({}); live {}", analysis.at.index,
                                        analysis.at.count, format_seconds(analysis.judged.time_ns), analysis.at.why,
                                        format_bytes(flame.bytes()))}};
  data["flame"] = flame.json(names, std::max<int64_t>(1, flame.bytes() / 2000));
  nlohmann::json rss = nlohmann::json::array(), tracked = nlohmann::json::array();
  for (const ProcessSample& sample : analysis.residency) {
    rss.push_back({sample.time_s, sample.rss_bytes});
    int64_t host = 0;
    for (size_t d = 0; d < sample.tracked_bytes.size(); ++d) {
      if (is_host_domain(static_cast<Domain>(d))) host += sample.tracked_bytes[d];
    }
    tracked.push_back({sample.time_s, host});
  }
  data["rss"] = rss;
  data["tracked"] = tracked;
  data["groups"] = nlohmann::json::array();
  for (size_t g = 0; g < analysis.groups.size() && g < top; ++g) {
    const GroupReport& group = analysis.groups[g];
    SiteJudgement judgement = group_judgement(analysis, g);
    std::string name = function_text(*group.user_frame, 80);
    if (!group.user_frame->file.empty()) name += fmt::format(" ({}:{})", module_base_name(group.user_frame->file), group.user_frame->line);
    data["groups"].push_back({{"name", name},
                              {"verdict", verdict_name(judgement.verdict)},
                              {"confidence", judgement.confidence},
                              {"live_bytes", group.live_bytes},
                              {"growth", judgement.growth_bytes_per_min},
                              {"leak_entropy", judgement.leak_entropy},
                              {"reason", judgement.reason},
                              {"series", points_json(group_series(analysis, group))}});
  }
  // "</" would end the script element that carries the data.
  std::string json = json_text(data, -1);
  std::string escaped;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      escaped += "<\\/";
      ++i;
    } else {
      escaped += json[i];
    }
  }
  out << fmt::format("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>leakscope: {} (pid {})</title></head><body>\n"
                     "<script type=\"application/json\" id=\"data\">{}</script>\n{}</body></html>\n",
                     html_escaped(process.exe), process.pid, escaped, kPage);
}

}  // namespace leakscope::report
