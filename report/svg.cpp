#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kevo {

namespace {

// Colours of the series in order (a qualitative palette readable on white).
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// Margins of the plot area inside the picture.
constexpr double kLeft = 78, kRight = 24, kTop = 34, kBottom = 52;

struct Scale {
  double lo, hi;  // data range (positive when log)
  bool log;
  double px0, px1;  // pixel range (px1 < px0 for the y axis)

  double to_px(double v) const {
    const double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return px0 + f * (px1 - px0);
  }
  bool plottable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// The data range of the values `v` on an axis, widened when degenerate.
std::pair<double, double> span(const std::vector<double>& v, bool log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v) {
    if (!std::isfinite(x) || (log && x <= 0)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  if (!(lo <= hi)) return log ? std::pair{1.0, 10.0} : std::pair{0.0, 1.0};
  if (log) {
    if (hi / lo < 1.5) return {lo / 1.5, hi * 1.5};
    return {lo / 1.15, hi * 1.15};
  }
  // Counts and times start at zero.
  if (lo >= 0) lo = 0;
  if (hi - lo < 1e-300) return {lo == 0 ? 0 : lo - 1, hi + 1};
  const double pad = 0.05 * (hi - lo);
  return {lo == 0 ? 0 : lo - pad, hi + pad};
}

// Tick positions: powers of ten on a log axis (with 2 and 5 when the range
// spans less than two decades); 1, 2 or 5 times a power of ten on a linear one.
std::vector<double> ticks(double lo, double hi, bool log) {
  std::vector<double> out;
  if (log) {
    const int d0 = static_cast<int>(std::floor(std::log10(lo)));
    const int d1 = static_cast<int>(std::ceil(std::log10(hi)));
    const bool fine = hi / lo < 100;
    for (int d = d0; d <= d1; ++d)
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double t = m * std::pow(10.0, d);
        if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push_back(t);
      }
    return out;
  }
  const double raw = (hi - lo) / 6;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step)
    out.push_back(std::abs(t) < 1e-12 * step ? 0.0 : t);
  return out;
}

std::string tick_label(double v) {
  return fmt::format("{:g}", v);
}

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // XML 1.0 allows no control characters but tab and newlines.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

SvgPlot::SvgPlot(std::string id, std::string title, PlotAxis x, PlotAxis y)
    : id_(std::move(id)), title_(std::move(title)), x_(std::move(x)), y_(std::move(y)) {}

std::string SvgPlot::render(int width, int height) const {
  std::vector<double> xs, ys;
  for (const auto& s : series_) {
    for (const auto& [x, y] : s.points) xs.push_back(x), ys.push_back(y);
    for (const auto& m : s.markers) xs.push_back(m.x), ys.push_back(m.y);
  }
  auto [xlo, xhi] = x_range_.first < x_range_.second ? x_range_ : span(xs, x_.log);
  auto [ylo, yhi] = y_range_.first < y_range_.second ? y_range_ : span(ys, y_.log);
  const Scale sx{xlo, xhi, x_.log, kLeft, width - kRight};
  const Scale sy{ylo, yhi, y_.log, height - kBottom, kTop};
  const double left = kLeft, right = width - kRight, top = kTop, bottom = height - kBottom;

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{0}\" class=\"plot\" width=\"{1}\" "
      "height=\"{2}\" viewBox=\"0 0 {1} {2}\" role=\"img\" aria-labelledby=\"{0}-title\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title id=\"{0}-title\">{3}</title>\n"
      "<defs><clipPath id=\"{0}-clip\"><rect x=\"{4}\" y=\"{5}\" width=\"{6}\" height=\"{7}\"/>"
      "</clipPath></defs>\n"
      "<rect width=\"{1}\" height=\"{2}\" fill=\"#ffffff\"/>\n"
      "<text class=\"plot-title\" x=\"{4}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}"
      "</text>\n",
      id_, width, height, xml_escape(title_), num(left), num(top), num(right - left),
      num(bottom - top));

  // Axes: the frame's bottom and left edges, ticks with grid lines, labels.
  o += fmt::format("<g class=\"axis x-axis\" data-scale=\"{}\">\n", x_.log ? "log" : "linear");
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#333333\"/>\n",
                   num(left), num(bottom), num(right));
  for (double t : ticks(xlo, xhi, x_.log)) {
    const double px = sx.to_px(t);
    o += fmt::format(
        "<g class=\"tick\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{0}\" y2=\"{3}\" stroke=\"#333333\"/>"
        "<text x=\"{0}\" y=\"{4}\" text-anchor=\"middle\">{5}</text></g>\n",
        num(px), num(top), num(bottom), num(bottom + 5), num(bottom + 18), tick_label(t));
  }
  o +=
      fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                  num((left + right) / 2), num(height - 12.0), xml_escape(x_.label));
  o += "</g>\n";
  o += fmt::format("<g class=\"axis y-axis\" data-scale=\"{}\">\n", y_.log ? "log" : "linear");
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333333\"/>\n",
                   num(left), num(top), num(bottom));
  for (double t : ticks(ylo, yhi, y_.log)) {
    const double py = sy.to_px(t);
    o += fmt::format(
        "<g class=\"tick\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{3}\" y1=\"{1}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#333333\"/>"
        "<text x=\"{4}\" y=\"{5}\" text-anchor=\"end\">{6}</text></g>\n",
        num(left), num(py), num(right), num(left - 5), num(left - 8), num(py + 4), tick_label(t));
  }
  o += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(16 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      num((top + bottom) / 2), xml_escape(y_.label));
  o += "</g>\n";

  // The series, clipped to the plot area.
  std::string legend;
  int legend_row = 0;
  for (size_t i = 0; i < series_.size(); ++i) {
    const PlotSeries& s = series_[i];
    const char* colour = kPalette[i % kPaletteSize];
    o += fmt::format("<g class=\"series-group {}\" data-name=\"{}\" clip-path=\"url(#{}-clip)\">\n",
                     xml_escape(s.kind), xml_escape(s.name), id_);
    if (s.style == PlotSeries::Style::markers) {
      for (const auto& m : s.markers) {
        if (!sx.plottable(m.x) || !sy.plottable(m.y)) continue;
        std::string data;
        for (const auto& [k, v] : m.data) data += fmt::format(" data-{}=\"{}\"", k, xml_escape(v));
        o += fmt::format(
            "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.6\" "
            "stroke=\"#333333\" stroke-width=\"0.5\"{}><title>{}</title></circle>\n",
            num(sx.to_px(m.x)), num(sy.to_px(m.y)), colour, data, xml_escape(m.title));
      }
    } else {
      std::string d;
      for (const auto& [x, y] : s.points) {
        if (!sx.plottable(x) || !sy.plottable(y)) continue;
        const double px = sx.to_px(x), py = sy.to_px(y);
        if (d.empty())
          d = fmt::format("M{} {}", num(px), num(py));
        else if (s.style == PlotSeries::Style::steps)
          d += fmt::format(" H{} V{}", num(px), num(py));
        else
          d += fmt::format(" L{} {}", num(px), num(py));
      }
      if (!d.empty())
        o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", d,
                         colour,
                         s.style == PlotSeries::Style::dashed ? " stroke-dasharray=\"6 4\"" : "");
    }
    o += "</g>\n";
    if (!s.name.empty()) {
      // A swatch drawn as the series is: a dot, a dashed or a solid line.
      const double lx = right - 250, ly = top + 12 + 16 * legend_row++;
      const std::string swatch =
          s.style == PlotSeries::Style::markers
              ? fmt::format(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.6\" "
                    "stroke=\"#333333\" stroke-width=\"0.5\"/>",
                    num(lx + 8), num(ly - 4), colour)
              : fmt::format(
                    "<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"{3}\" "
                    "stroke-width=\"2\"{4}/>",
                    num(lx), num(lx + 16), num(ly - 4), colour,
                    s.style == PlotSeries::Style::dashed ? " stroke-dasharray=\"4 3\"" : "");
      legend += fmt::format("<g class=\"legend-entry\">{}<text x=\"{}\" y=\"{}\">{}</text></g>\n",
                            swatch, num(lx + 22), num(ly), xml_escape(s.name));
    }
  }
  // The legend sits in the top right corner on a white card, over the lines.
  if (legend_row > 0)
    legend = fmt::format(
                 "<rect x=\"{}\" y=\"{}\" width=\"250\" height=\"{}\" fill=\"#ffffff\" "
                 "fill-opacity=\"0.85\" stroke=\"#dddddd\"/>\n",
                 num(right - 256), num(top + 1), num(16.0 * legend_row + 6)) +
             legend;
  o += "<g class=\"legend\">\n" + legend + "</g>\n</svg>\n";
  return o;
}

}  // namespace kevo
