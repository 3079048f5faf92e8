// Small SVG plots for reports: linear or log axes with ticks, step and
// straight lines, point markers that carry data-* attributes and a hover
// title, and a legend. Only presentation attributes, no CSS or script, so a
// plot looks the same inline in an HTML page and as a file beside Markdown.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kevo {

struct PlotAxis {
  std::string label;
  bool log = false;
};

struct PlotMarker {
  double x = 0, y = 0;
  std::string title;                                      // shown on hover
  std::vector<std::pair<std::string, std::string>> data;  // data-NAME="VALUE"
};

struct PlotSeries {
  enum class Style { steps, line, dashed, markers };
  std::string name;  // in the legend; empty: not listed
  std::string kind;  // class of its group ("series", "roof", "points")
  Style style = Style::line;
  std::vector<std::pair<double, double>> points;  // for lines
  std::vector<PlotMarker> markers;                // for Style::markers
};

class SvgPlot {
 public:
  SvgPlot(std::string id, std::string title, PlotAxis x, PlotAxis y);

  void add(PlotSeries series) { series_.push_back(std::move(series)); }
  // Fix an axis range; otherwise it spans the data. What falls outside is
  // clipped at the plot area.
  void set_x_range(double lo, double hi) { x_range_ = {lo, hi}; }
  void set_y_range(double lo, double hi) { y_range_ = {lo, hi}; }

  // <svg id=ID class="plot" ...>: groups of class "axis x-axis" and
  // "axis y-axis" (ticks of class "tick"), one group per series with class
  // "series-group KIND" holding a path or circles of class "point", a
  // group of class "legend".
  std::string render(int width = 760, int height = 420) const;

 private:
  std::string id_, title_;
  PlotAxis x_, y_;
  std::vector<PlotSeries> series_;
  std::pair<double, double> x_range_{0, 0}, y_range_{0, 0};
};

// Text safe inside XML and HTML elements and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace kevo
