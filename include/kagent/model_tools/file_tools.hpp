#pragma once
// read_file, write_file, edit_file, list_files: the model's hands in its workspace.
//   read_file  {path, start_line?, max_lines?}  numbered lines (cut at max_lines, default 400)
//   write_file {path, content}                  creates parent folders; overwrites
//   edit_file  {path, old_text, new_text}       exact search/replace: an error when old_text is
//                                               absent or occurs more than once (say which lines)
//   list_files {path?}                          the tree under path (default the root), with sizes
#include "kagent/model_tools/tool.hpp"
#include "kagent/model_tools/workspace.hpp"

namespace kagent::model_tools {

ToolSet make_file_tools(const Workspace& ws);

}  // namespace kagent::model_tools
