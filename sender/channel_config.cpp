// --channel on the command line and in the config file, and what it refuses beside the other
// options (declared in sender/config.hpp).
#include <fmt/format.h>

#include <filesystem>

#include "common/folder_paths.hpp"
#include "sender/config.hpp"

namespace ddft::sender {

void add_channel_option(CLI::App& app, SenderConfig& cfg, const std::string& group) {
  app.add_option_function<std::vector<std::string>>(
         "--channel",
         [&cfg](const std::vector<std::string>& values) {
           cfg.channels.clear();
           for (const std::string& v : values) {
             ChannelSpec spec;
             if (auto why = parse_channel(v, &spec)) throw CLI::ValidationError("--channel", *why);
             cfg.channels.push_back(std::move(spec));
           }
         },
         "A named source sharing the link with the others (repeatable): "
         "NAME:watch=DIR or NAME:source=PATH[,source=PATH...], then ,class=N (0 first, strict "
         "priority), ,weight=N (share within the class), ,rate=MB/s (a cap over all lanes), "
         ",min-share=P% (what a lower class keeps under a busy higher one). Its files land in "
         "the receiver's OUTPUT/NAME/; instead of --watch or files to send")
      ->type_name("NAME:KEY=VALUE,...")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(group);
}

namespace {

// `dir` absolute and normal, without a trailing '/' (common::at_or_below compares such paths).
std::string normal(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(dir, ec);
  std::string out = (ec ? std::filesystem::absolute(dir) : p).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// Two channels watching one folder, or one inside the other, would send each file twice and
// fight over it; a channel's sent files inside another's folder would be sent again.
void check_folders(const SenderConfig& cfg) {
  for (size_t i = 0; i < cfg.channels.size(); ++i) {
    const ChannelSpec& a = cfg.channels[i];
    if (a.watch_dir.empty()) continue;
    const std::string pa = normal(a.watch_dir);
    for (size_t j = i + 1; j < cfg.channels.size(); ++j) {
      const ChannelSpec& b = cfg.channels[j];
      const std::string pb = normal(b.watch_dir);
      if (common::at_or_below(pa, pb) || common::at_or_below(pb, pa)) {
        throw CLI::ValidationError(
            "--channel", fmt::format("channels '{}' and '{}' watch one folder, or one inside the "
                                     "other: each file would be sent twice",
                                     a.name, b.name));
      }
    }
    if (!cfg.sent_dir.empty() && common::at_or_below(normal(cfg.sent_dir), pa)) {
      throw CLI::ValidationError(
          "--sent-dir", fmt::format("it is inside channel '{}''s folder: what was sent would be "
                                    "sent again",
                                    a.name));
    }
  }
}

}  // namespace

void finalize_channel_config(SenderConfig& cfg) {
  if (cfg.channels.empty()) return;
  if (auto why = channels_refusal(cfg.channels)) throw CLI::ValidationError("--channel", *why);
  check_folders(cfg);
  if (!cfg.watch_dir.empty() || !cfg.sources.empty()) {
    throw CLI::ValidationError(
        "--channel", fmt::format("each channel names its own source: give no --watch or files "
                                 "to send with it (got '{}')",
                                 cfg.watch_dir.empty() ? cfg.sources.front() : cfg.watch_dir));
  }
  if (!cfg.resend_request.empty()) {
    throw CLI::ValidationError("--resend-request", "cannot be used with --channel");
  }
  if (!cfg.resend_after.empty()) {
    throw CLI::ValidationError("--resend-after", "cannot be used with --channel");
  }
  if (cfg.channels.size() > 1 && !cfg.watch_journal.empty()) {
    throw CLI::ValidationError("--watch-journal",
                               "each channel's hot folder keeps its own journal: leave it out");
  }
  if (cfg.hot_folder() && cfg.symlinks == SymlinkMode::kFollow) {
    throw CLI::ValidationError("--symlinks",
                               "follow cannot be used with hot folders (--channel NAME:watch=)");
  }
}

}  // namespace ddft::sender
