// Writes a linker version script from the verb table (record/verb_table.h)
// and the librdmacm table (rdmacm_table.h): the template's line
// "@IBVERBS_NODES@" becomes one node per libibverbs symbol version, each
// symbol of the table under its version, the nodes chained oldest first as
// libibverbs.so.1 chains them (IBVERBS_1.1 inherits IBVERBS_1.0, ...;
// IBVERBS_PRIVATE_<n> stands alone), and every other symbol local; the
// line "@RDMACM_NODES@" the same for librdmacm.so.1, and "@GLIBC_NODES@"
// for the C library's functions (libc_table.h), with a node of its own for
// each older version a row is exported under too. The rest of the template
// is copied as it is.
//
//   generate_version_map [--with-helpers] TEMPLATE OUTPUT
//
// --with-helpers adds the functions programs take from libibverbs itself
// (VERBFAULT_LIBIBVERBS_HELPERS): the provider double's script.
#include "libc_table.h"
#include "rdmacm_table.h"
#include "verb_table.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

struct Exported {
  std::string_view symbol;
  std::string_view version;
};

#define VERBFAULT_EXPORTED(ret, name, symbol, version, params, args, front, route, by) \
  Exported{#symbol, version},
constexpr Exported kVerbs[] = {VERBFAULT_VERBS(VERBFAULT_EXPORTED)};
#undef VERBFAULT_EXPORTED

#define VERBFAULT_RDMACM_EXPORTED(name, version, params, args, guard) Exported{#name, version},
constexpr Exported kRdmacm[] = {VERBFAULT_RDMACM_CALLS(VERBFAULT_RDMACM_EXPORTED)};
#undef VERBFAULT_RDMACM_EXPORTED

#define VERBFAULT_LIBC_EXPORTED(ret, name, version, older, kind, target, params, args) \
  Exported{#name, version},
constexpr Exported kLibc[] = {VERBFAULT_LIBC_CALLS(VERBFAULT_LIBC_EXPORTED)};
#undef VERBFAULT_LIBC_EXPORTED

// The older versions (symver aliases name them; the script must define
// their nodes, which list no symbol of their own).
#define VERBFAULT_LIBC_OLDER(ret, name, version, older, kind, target, params, args) \
  VERBFAULT_LIBC_OLDER_VERSION(older),
constexpr std::string_view kLibcOlder[] = {VERBFAULT_LIBC_CALLS(VERBFAULT_LIBC_OLDER)};
#undef VERBFAULT_LIBC_OLDER

#define VERBFAULT_HELPER(symbol, version) Exported{#symbol, version},
constexpr Exported kHelpers[] = {VERBFAULT_LIBIBVERBS_HELPERS(VERBFAULT_HELPER)};
#undef VERBFAULT_HELPER

// "IBVERBS_1.14" -> (0, {1, 14}); "GLIBC_2.3.2" -> (0, {2, 3, 2});
// "IBVERBS_PRIVATE_34" -> (1, {34}): the private node after every public one.
std::pair<int, std::vector<int>> version_order(std::string_view version) {
  constexpr std::string_view kPrivate = "PRIVATE_";
  const size_t at = version.find(kPrivate);
  const bool is_private = at != std::string_view::npos;
  std::string_view number =
      is_private ? version.substr(at + kPrivate.size()) : version.substr(version.rfind('_') + 1);
  std::vector<int> parts;
  for (size_t dot; (dot = number.find('.')) != std::string_view::npos;
       number.remove_prefix(dot + 1))
    parts.push_back(std::stoi(std::string(number.substr(0, dot))));
  parts.push_back(std::stoi(std::string(number)));
  return {is_private ? 1 : 0, parts};
}

// `local`: the first node makes every other symbol local (once a script).
// `empty`: versions that get a node even with no symbol of their own.
template <class... Tables>
std::string nodes(bool local, std::span<const std::string_view> empty, const Tables&... tables) {
  auto by_order = [](std::string_view a, std::string_view b) {
    return version_order(a) < version_order(b);
  };
  std::map<std::string_view, std::vector<std::string_view>, decltype(by_order)> versions(by_order);
  for (std::span<const Exported> table : {std::span<const Exported>(tables)...})
    for (const Exported& exported : table) versions[exported.version].push_back(exported.symbol);
  for (std::string_view version : empty)
    if (!version.empty()) versions[version];

  std::ostringstream out;
  std::string_view parent;
  bool first = true;
  for (auto& [version, symbols] : versions) {
    std::sort(symbols.begin(), symbols.end());
    out << version << " {\n";
    if (!symbols.empty()) out << "  global:\n";
    for (std::string_view symbol : symbols) out << "    " << symbol << ";\n";
    if (first && local) out << "  local: *;\n";
    out << "}";
    const bool is_private = version_order(version).first == 1;
    if (!first && !is_private) out << " " << parent;
    out << ";\n";
    if (!is_private) parent = version;
    first = false;
  }
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> arguments(argv + 1, argv + argc);
  const bool with_helpers = !arguments.empty() && arguments.front() == "--with-helpers";
  if (with_helpers) arguments.erase(arguments.begin());
  if (arguments.size() != 2) {
    std::fprintf(stderr, "usage: generate_version_map [--with-helpers] TEMPLATE OUTPUT\n");
    return 2;
  }
  std::ifstream in{std::string(arguments[0])};
  if (!in) {
    std::fprintf(stderr, "generate_version_map: cannot read %s\n",
                 std::string(arguments[0]).c_str());
    return 1;
  }
  std::ostringstream text;
  bool replaced = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "@IBVERBS_NODES@") {
      text << (with_helpers ? nodes(true, {}, kVerbs, kHelpers) : nodes(true, {}, kVerbs));
      replaced = true;
    } else if (line == "@RDMACM_NODES@") {
      text << nodes(false, {}, kRdmacm);
      replaced = true;
    } else if (line == "@GLIBC_NODES@") {
      text << nodes(false, kLibcOlder, kLibc);
      replaced = true;
    } else {
      text << line << "\n";
    }
  }
  if (!replaced) {
    std::fprintf(stderr, "generate_version_map: %s has no line @IBVERBS_NODES@ or @RDMACM_NODES@\n",
                 std::string(arguments[0]).c_str());
    return 1;
  }
  std::ofstream out{std::string(arguments[1])};
  out << text.str();
  return out ? 0 : 1;
}
