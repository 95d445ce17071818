// Small pieces the pictures and pages share: escaping, device colours, the page frame (inline
// CSS and a hover script, nothing fetched), writing a file.
#ifndef SPMDCHECK_VIZ_HTML_H_
#define SPMDCHECK_VIZ_HTML_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace spmdcheck::viz {

// Text for HTML/SVG content and attribute values (&, <, >, ", ').
std::string Escape(absl::string_view text);

// A fill colour of device `device`: hues spread by the golden angle, so neighbours differ.
std::string DeviceColor(int64_t device);
// A colour for group `group` of a collective (a darker palette than devices).
std::string GroupColor(int64_t group);

// A whole self-contained HTML page: `title`, the shared style and hover script, `body`.
std::string Page(absl::string_view title, absl::string_view body);

}  // namespace spmdcheck::viz

#endif  // SPMDCHECK_VIZ_HTML_H_
