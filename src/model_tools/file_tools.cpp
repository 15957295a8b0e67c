#include "kagent/model_tools/file_tools.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kagent::model_tools {

namespace {

constexpr uintmax_t kMaxFileBytes = 4u << 20;  // larger files are data, not code: the shell reads those
constexpr size_t kBinaryProbeBytes = 8192;     // a NUL in here and the file is not text
constexpr int64_t kDefaultMaxLines = 400;
constexpr int64_t kMaxMaxLines = 2000;
constexpr size_t kMaxLineBytes = 2000;  // a minified or generated line would flood the context
constexpr size_t kMaxReadOutputBytes = 256 << 10;
constexpr size_t kMaxListEntries = 500;
constexpr size_t kMaxCountedEntries = 100000;  // list_files stops counting here (a huge tree)
constexpr size_t kMaxShownMatches = 20;
constexpr size_t kMaxSnippetLines = 30;  // edit_file shows the edited lines when they are this few

// ---- text helpers -------------------------------------------------------------------------

// Lines without their '\n'; a final '\n' ends the last line rather than starting an empty one.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view ws = " \t\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Cut at most max bytes, never inside a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view s, size_t max) {
  if (s.size() <= max) return s;
  while (max > 0 && (static_cast<unsigned char>(s[max]) & 0xC0) == 0x80) --max;
  return s.substr(0, max);
}

// "   12| text" with the width fitting the file's last line number.
void append_numbered(std::string& out, size_t number, std::string_view line, int width) {
  std::string_view shown = utf8_prefix(line, kMaxLineBytes);
  out += fmt::format("{:>{}}| {}", number, width, shown);
  if (shown.size() < line.size()) out += fmt::format(" [... {} more bytes on this line]", line.size() - shown.size());
  out += '\n';
}

int number_width(size_t last_line) {
  return std::max<int>(5, static_cast<int>(fmt::format("{}", last_line).size()));
}

std::string line_range(int first, int last) {
  return first == last ? fmt::format("line {}", first) : fmt::format("lines {}-{}", first, last);
}

std::string join_numbers(const std::vector<int>& numbers, size_t total) {
  std::string s;
  for (size_t i = 0; i < numbers.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", numbers[i]);
  if (total > numbers.size()) s += fmt::format(", ... ({} in all)", total);
  return s;
}

// ---- file helpers -------------------------------------------------------------------------

// A text file the model named, read whole. Everything that makes it unreadable as text is the
// model's to fix (a wrong path, a folder, a binary), so those are ToolErrors saying what to do.
std::string read_text(const fs::path& p, const std::string& given, std::string_view missing_hint) {
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw ToolError(fmt::format("cannot read {}: {}", given, ec.message()));
  if (!fs::exists(st)) throw ToolError(fmt::format("{}: no such file{}", given, missing_hint));
  if (fs::is_directory(st))
    throw ToolError(fmt::format("{} is a folder, not a file: list_files shows what it holds", given));
  if (!fs::is_regular_file(st))
    throw ToolError(fmt::format("{} is not a regular file (a device, pipe or socket)", given));
  uintmax_t size = fs::file_size(p, ec);
  if (ec) throw ToolError(fmt::format("cannot read {}: {}", given, ec.message()));
  if (size > kMaxFileBytes)
    throw ToolError(
        fmt::format("{} is {:.1f} MiB: the file tools handle files up to 4 MiB; use the shell (head, grep, ...) "
                    "for this one",
                    given, static_cast<double>(size) / (1 << 20)));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ToolError(fmt::format("cannot read {}: {}", given, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = std::move(ss).str();
  if (std::string_view(text).substr(0, kBinaryProbeBytes).find('\0') != std::string_view::npos)
    throw ToolError(
        fmt::format("{} looks like a binary file (it has NUL bytes): the file tools handle text files only", given));
  return text;
}

// Writes atomically (a reader, or a crash, never sees half a file), creating parent folders and
// keeping the permissions of a file it replaces (an executable script stays executable).
void write_text(const fs::path& p, const std::string& given, std::string_view content) {
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (fs::is_directory(st))
    throw ToolError(fmt::format("{} is a folder: give the path of a file to write (e.g. {}/file.cu)", given, given));
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw ToolError(fmt::format("{} is not a regular file (a device, pipe or socket): not writing it", given));
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw ToolError(fmt::format("cannot create the folder for {}: {}", given, ec.message()));
  try {
    write_file_atomic(p, content);
  } catch (const Error& e) {
    throw ToolError(fmt::format("cannot write {}: {}", given, e.what()));
  }
  if (fs::exists(st)) fs::permissions(p, st.permissions(), ec);  // best effort: the content is written
}

// ---- specs --------------------------------------------------------------------------------

json object_schema(json properties, const std::vector<std::string>& required) {
  return json{{"type", "object"},
              {"properties", std::move(properties)},
              {"required", required},
              {"additionalProperties", false}};
}

json string_property(const std::string& description) {
  return json{{"type", "string"}, {"description", description}};
}

json integer_property(const std::string& description, int64_t minimum, std::optional<int64_t> maximum = {}) {
  json p{{"type", "integer"}, {"description", description}, {"minimum", minimum}};
  if (maximum) p["maximum"] = *maximum;
  return p;
}

const char* const kPathHelp = "Path relative to the workspace root, e.g. \"kernel.cu\" or \"src/util.cuh\".";

// ---- the tools ----------------------------------------------------------------------------

class ReadFile : public Tool {
 public:
  explicit ReadFile(Workspace ws) : ws_(std::move(ws)) {}

  llm::ToolSpec spec() const override {
    return {
        "read_file",
        fmt::format("Read a text file in the workspace. Returns its lines numbered like \"   12| text\" (the "
                    "number and \"| \" are not part of the file). Shows up to {} lines from start_line "
                    "(default {}); when a file is longer the result says so and which start_line reads on. "
                    "Files up to 4 MiB; binary files are refused.",
                    kDefaultMaxLines, kDefaultMaxLines),
        object_schema({{"path", string_property(kPathHelp)},
                       {"start_line", integer_property("First line to show, 1-based (default 1).", 1)},
                       {"max_lines", integer_property(fmt::format("Most lines to show (default {}).", kDefaultMaxLines),
                                                      1, kMaxMaxLines)}},
                      {"path"})};
  }

  ToolResult run(const json& args) override {
    std::string path = arg_string(args, "path");
    int64_t start = arg_int(args, "start_line", 1, INT_MAX).value_or(1);
    int64_t max_lines = arg_int(args, "max_lines", 1, kMaxMaxLines).value_or(kDefaultMaxLines);
    std::string text = read_text(ws_.resolve(path), path, "");
    auto lines = split_lines(text);
    size_t total = lines.size();
    json record{{"path", path}, {"bytes", text.size()}, {"total_lines", total}};
    if (total == 0) return {fmt::format("{}: empty file (0 lines)", path), false, record};
    if (static_cast<size_t>(start) > total)
      throw ToolError(fmt::format("start_line {} is past the end of {}: it has {} lines", start, path, total));

    size_t first = static_cast<size_t>(start);
    size_t last = std::min(total, first - 1 + static_cast<size_t>(max_lines));
    int width = number_width(last);
    std::string body;
    for (size_t n = first; n <= last; ++n) {
      if (body.size() > kMaxReadOutputBytes) {  // very long lines: fewer of them
        last = n - 1;
        break;
      }
      append_numbered(body, n, lines[n - 1], width);
    }
    std::string out = fmt::format("{}: {} lines, {} bytes", path, total, text.size());
    out += first == 1 && last == total ? "\n" : fmt::format("; showing {}\n", line_range(first, last));
    out += body;
    if (last < total)
      out += fmt::format("[cut after line {}: {} more lines; call read_file with start_line={} to read on]\n", last,
                         total - last, last + 1);
    record["start_line"] = first;
    record["end_line"] = last;
    return {std::move(out), false, std::move(record)};
  }

 private:
  Workspace ws_;
};

class WriteFile : public Tool {
 public:
  explicit WriteFile(Workspace ws) : ws_(std::move(ws)) {}

  llm::ToolSpec spec() const override {
    return {"write_file",
            "Create or overwrite a file in the workspace with the given content (the whole file). Parent folders "
            "are created. To change part of an existing file, edit_file is cheaper and safer.",
            object_schema({{"path", string_property(kPathHelp)},
                           {"content", string_property("The complete new content of the file.")}},
                          {"path", "content"})};
  }

  ToolResult run(const json& args) override {
    std::string path = arg_string(args, "path");
    std::string content = arg_string(args, "content");
    fs::path p = ws_.resolve(path);
    std::error_code ec;
    bool existed = fs::exists(p, ec);
    write_text(p, path, content);
    size_t lines = split_lines(content).size();
    return {fmt::format("wrote {}: {} bytes, {} lines{}", path, content.size(), lines, existed ? "" : " (new file)"),
            false,
            {{"path", path}, {"bytes", content.size()}, {"lines", lines}, {"created", !existed}}};
  }

 private:
  Workspace ws_;
};

class EditFile : public Tool {
 public:
  explicit EditFile(Workspace ws) : ws_(std::move(ws)) {}

  llm::ToolSpec spec() const override {
    return {"edit_file",
            "Replace one exact occurrence of old_text in a file with new_text. old_text must match the file "
            "character for character (indentation and line breaks included; no regular expressions) and must "
            "occur exactly once: include enough surrounding lines to make it unique. Copy it from read_file's "
            "output without the line-number prefix. An empty new_text deletes old_text.",
            object_schema({{"path", string_property(kPathHelp)},
                           {"old_text", string_property("The exact text to replace; must occur once in the file.")},
                           {"new_text", string_property("The text to put in its place (may be empty).")}},
                          {"path", "old_text", "new_text"})};
  }

  ToolResult run(const json& args) override {
    std::string path = arg_string(args, "path");
    std::string old_text = arg_string(args, "old_text");
    std::string new_text = arg_string(args, "new_text");
    if (old_text.empty())
      throw ToolError("old_text is empty: give the exact text to replace (write_file writes a whole file)");
    fs::path p = ws_.resolve(path);
    std::string text = read_text(p, path, " (write_file creates files)");

    std::vector<size_t> matches;  // overlapping ones too: "aa" in "aaa" is ambiguous
    for (size_t pos = text.find(old_text); pos != std::string::npos; pos = text.find(old_text, pos + 1))
      matches.push_back(pos);
    if (matches.empty()) throw ToolError(not_found_message(text, old_text, path));
    if (matches.size() > 1) {
      std::vector<int> at;
      for (size_t i = 0; i < matches.size() && i < kMaxShownMatches; ++i)
        at.push_back(line_of_offset(text, matches[i]));
      throw ToolError(
          fmt::format("old_text occurs {} times in {} (starting at lines {}): include more of the "
                      "surrounding text so that it matches exactly once",
                      matches.size(), path, join_numbers(at, matches.size())));
    }
    if (old_text == new_text) throw ToolError("old_text and new_text are the same: nothing to change");

    size_t pos = matches[0];
    std::string updated = text.substr(0, pos) + new_text + text.substr(pos + old_text.size());
    write_text(p, path, updated);

    int first = line_of_offset(text, pos);
    int old_last = line_of_offset(text, pos + old_text.size() - 1);
    auto lines = split_lines(updated);
    std::string out;
    json record{{"path", path}, {"old_first_line", first}, {"old_last_line", old_last}};
    if (new_text.empty()) {
      out = fmt::format("edited {}: removed the text at {}; the file now has {} lines\n", path,
                        line_range(first, old_last), lines.size());
    } else {
      int new_last = line_of_offset(updated, pos + new_text.size() - 1);
      record["new_last_line"] = new_last;
      out = fmt::format("edited {}: replaced {} with what is now {}; the file now has {} lines\n", path,
                        line_range(first, old_last), line_range(first, new_last), lines.size());
      // The edited lines with a little context, so the model sees the result without a read_file.
      if (new_last - first + 1 <= static_cast<int>(kMaxSnippetLines)) {
        size_t from = static_cast<size_t>(std::max(1, first - 2));
        size_t to = std::min(lines.size(), static_cast<size_t>(new_last) + 2);
        int width = number_width(to);
        for (size_t n = from; n <= to; ++n) append_numbered(out, n, lines[n - 1], width);
      }
    }
    return {std::move(out), false, std::move(record)};
  }

 private:
  // Not found. A common near miss is indentation (tabs for spaces, a lost leading space): when
  // old_text matches with each line's leading and trailing whitespace ignored, say where.
  static std::string not_found_message(std::string_view text, std::string_view old_text, const std::string& path) {
    std::string msg = fmt::format("old_text was not found in {}", path);
    auto want = split_lines(old_text);
    for (auto& w : want) w = trim(w);
    bool all_blank = std::all_of(want.begin(), want.end(), [](std::string_view w) { return w.empty(); });
    auto have = split_lines(text);
    std::vector<int> at;
    size_t count = 0;
    if (!all_blank && have.size() >= want.size()) {
      size_t k = want.size();
      for (size_t i = 0; i + k <= have.size(); ++i) {
        bool ok;
        if (k == 1) {
          ok = trim(have[i]).find(want[0]) != std::string_view::npos;
        } else {
          // The first and last lines of old_text may be partial lines of the file.
          ok = trim(have[i]).ends_with(want[0]) && trim(have[i + k - 1]).starts_with(want[k - 1]);
          for (size_t j = 1; ok && j + 1 < k; ++j) ok = trim(have[i + j]) == want[j];
        }
        if (ok && count++ < kMaxShownMatches) at.push_back(static_cast<int>(i + 1));
      }
    }
    if (at.empty()) return msg + ": check it against read_file's output (it must match exactly, whitespace included)";
    return msg + fmt::format(
                     " exactly, but it does match when whitespace at the start and end of lines is ignored, at "
                     "line{} {}: copy the text exactly as read_file shows it (indentation included)",
                     count == 1 ? "" : "s", join_numbers(at, count));
  }

  Workspace ws_;
};

class ListFiles : public Tool {
 public:
  explicit ListFiles(Workspace ws) : ws_(std::move(ws)) {}

  llm::ToolSpec spec() const override {
    return {
        "list_files",
        fmt::format("List the files and folders under a folder of the workspace, recursively, sorted: folders "
                    "end in '/', files show their size in bytes, symbolic links show their target (\"-> "
                    "target\") and are not followed. At most {} entries are shown.",
                    kMaxListEntries),
        object_schema(
            {{"path", string_property("Folder relative to the workspace root (default \".\", the whole workspace).")}},
            {})};
  }

  ToolResult run(const json& args) override {
    std::string path =
        args.is_object() && args.contains("path") && !args["path"].is_null() ? arg_string(args, "path") : ".";
    fs::path dir = ws_.resolve(path);
    std::error_code ec;
    fs::file_status st = fs::status(dir, ec);
    if (!fs::exists(st)) throw ToolError(fmt::format("{}: no such folder", path));
    if (fs::is_regular_file(st)) {
      uintmax_t size = fs::file_size(dir, ec);
      return {fmt::format("{} is a file ({} bytes), not a folder: read_file reads it\n", path, size),
              false,
              {{"path", path}, {"entries", 0}}};
    }
    if (!fs::is_directory(st)) throw ToolError(fmt::format("{} is not a folder", path));

    Listing listing{ws_, {}, 0, false};
    listing.walk(dir);
    std::string where = dir == ws_.root() ? "the workspace" : path;
    std::string more = listing.stopped ? "more than " : "";
    std::string out;
    if (listing.total == 0) {
      out = fmt::format("{} is empty\n", where);
    } else {
      out = fmt::format("{}: {}{} entr{} (paths relative to the workspace root)\n", where, more, listing.total,
                        listing.total == 1 ? "y" : "ies");
      for (const auto& line : listing.shown) out += line + '\n';
      if (listing.shown.size() < listing.total)
        out += fmt::format("[showing the first {} of {}{} entries: list a subfolder to see the rest]\n",
                           listing.shown.size(), more, listing.total);
    }
    return {std::move(out), false, {{"path", path}, {"entries", listing.total}, {"shown", listing.shown.size()}}};
  }

 private:
  // One run's listing: depth first, each folder's entries sorted by name, so a folder's contents
  // follow it. Symlinks are shown, never followed (a link to / would list the machine).
  struct Listing {
    const Workspace& ws;
    std::vector<std::string> shown;
    size_t total = 0;
    bool stopped = false;  // kMaxCountedEntries reached: the total is a lower bound

    void walk(const fs::path& dir) {
      std::error_code ec;
      std::vector<fs::directory_entry> entries;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
      if (ec) {
        add(fmt::format("{}/ [cannot list: {}]", ws.relative(dir), ec.message()));
        return;
      }
      std::sort(entries.begin(), entries.end(),
                [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
      for (const auto& e : entries) {
        if (stopped) return;
        std::string rel = ws.relative(e.path());
        fs::file_status st = e.symlink_status(ec);
        if (fs::is_symlink(st)) {
          add(fmt::format("{} -> {}", rel, fs::read_symlink(e.path(), ec).string()));
        } else if (fs::is_directory(st)) {
          add(rel + "/");
          walk(e.path());
        } else if (fs::is_regular_file(st)) {
          add(fmt::format("{} ({} bytes)", rel, e.file_size(ec)));
        } else {
          add(rel + " (special file)");
        }
      }
    }

    void add(std::string line) {
      if (++total >= kMaxCountedEntries) stopped = true;
      if (shown.size() < kMaxListEntries) shown.push_back(std::move(line));
    }
  };

  Workspace ws_;
};

}  // namespace

ToolSet make_file_tools(const Workspace& ws) {
  ToolSet tools;
  tools.push_back(std::make_unique<ReadFile>(ws));
  tools.push_back(std::make_unique<WriteFile>(ws));
  tools.push_back(std::make_unique<EditFile>(ws));
  tools.push_back(std::make_unique<ListFiles>(ws));
  return tools;
}

}  // namespace kagent::model_tools
