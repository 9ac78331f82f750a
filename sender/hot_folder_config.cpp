// The hot folder's command-line options and the send-side globs (declared in sender/config.hpp).
#include <stdexcept>

#include "sender/config.hpp"

namespace ddft::sender {

void add_hot_folder_options(CLI::App& app, SenderConfig& cfg) {
  const std::string hot = "Hot folder (one long session; SIGTERM ends it)";
  auto* watch = app.add_option("--watch", cfg.watch_dir,
                               "Send every file that lands in this folder or a subfolder (under "
                               "its path there) once it is complete, then delete it (or move it "
                               "to --sent-dir); instead of files and folders to send")
                    ->group(hot);
  app.add_option("--sent-dir", cfg.sent_dir,
                 "Move sent files here, keeping their folders (a name taken gets a number: "
                 "a.1.txt); on the same filesystem, outside --watch. Default: delete them")
      ->needs(watch)
      ->group(hot);
  app.add_option("--sent-keep-hours", cfg.sent_keep_hours,
                 "Make --sent-dir a retention folder: remove what was moved there longer ago "
                 "than this, oldest first (0: keep it all)")
      ->check(CLI::Range(0.0, 24.0 * 3660))
      ->needs("--sent-dir")
      ->group(hot)
      ->capture_default_str();
  app.add_option("--sent-keep-gb", cfg.sent_keep_gb,
                 "And keep it within this many GiB, oldest first, but never a file the history "
                 "still repeats on the wire (0: no bound)")
      ->check(CLI::Range(0.0, 1e6))
      ->needs("--sent-dir")
      ->group(hot)
      ->capture_default_str();
  app.add_option("--settle", cfg.settle_s,
                 "Seconds a file must stay unchanged, after its writer closed it or it was moved "
                 "in, before it is sent")
      ->check(CLI::Range(0.0, 86400.0))
      ->needs(watch)
      ->group(hot)
      ->capture_default_str();
  app.add_option("--watch-journal", cfg.watch_journal,
                 "Where the hot folder records what it sent, so that a restart neither sends a "
                 "file twice nor forgets one (default DIR/.ddft-watch-journal)")
      ->needs(watch)
      ->group(hot);
  const std::string globs = "Filters (one-shot sends and the hot folder)";
  app.add_option("--include", cfg.includes,
                 "Send only files matching this glob (repeatable); without '/' it matches the base "
                 "name, with '/' the relative path ('*' crossing '/')")
      ->allow_extra_args(false)  // one pattern each: a source after it is not a pattern
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(globs);
  app.add_option("--exclude", cfg.excludes,
                 "Leave out files matching this glob (repeatable; wins over --include)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(globs);
  app.add_option("--shard", cfg.shard_text,
                 "This host is one of N sharing one hot folder or list of sources (each with its "
                 "own link and receiver): send only the files whose relative path hashes to K "
                 "(XXH3-64 modulo N, K from 0) and leave the others alone")
      ->type_name("K/N")
      ->check(CLI::Validator(
          [](const std::string& text) {
            Shard shard;
            std::string error;
            return parse_shard(text, &shard, &error) ? std::string() : error;
          },
          ""))
      ->group(globs);
  app.add_option("--symlinks", cfg.symlinks_text,
                 "Symbolic links inside the folders sent: skip (named once each and counted, in "
                 "the summary and the manifest), follow (to files and folders, a folder reached "
                 "twice walked once; not with --watch), or error (each one fails, as an "
                 "unreadable file does). Links named on the command line are followed")
      ->check(CLI::IsMember({"skip", "follow", "error"}))
      ->group(globs)
      ->capture_default_str();
  app.add_option("--test-crash-after-sent", cfg.test_crash_after_sent)->group("");
}

void finalize_hot_folder_config(SenderConfig& cfg) {
  try {
    cfg.filter = common::PathFilter(cfg.includes, cfg.excludes);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());
  }
  // The option's check has refused a bad value already, with the same line; a config built
  // without the parser (tests) gets it here.
  cfg.shard = Shard{};
  if (!cfg.shard_text.empty()) {
    std::string error;
    if (!parse_shard(cfg.shard_text, &cfg.shard, &error)) {
      throw CLI::ValidationError("--shard", error);
    }
  }
  // The option's check has refused anything else already; a config made in code gets it here.
  if (!parse_symlink_mode(cfg.symlinks_text, &cfg.symlinks)) {
    throw CLI::ValidationError("--symlinks", "expected skip, follow or error");
  }
  if (cfg.watch_dir.empty()) {
    if (cfg.sources.empty() && cfg.resend_request.empty()) {
      throw CLI::RequiredError("files or folders to send (or --watch DIR)");
    }
    return;
  }
  if (!cfg.resend_request.empty()) {
    throw CLI::ValidationError("--resend-request",
                               "sends the files a request names, once: not with --watch");
  }
  if (cfg.symlinks == SymlinkMode::kFollow) {
    throw CLI::ValidationError("--symlinks",
                               "follow cannot be used with --watch: the hot folder deletes or "
                               "moves what it sends, and a link's target is not its own to "
                               "remove (skip or error)");
  }
  if (!cfg.sources.empty()) {
    throw CLI::ValidationError("--watch", "sends what lands in " + cfg.watch_dir +
                                              ": give no files or folders with it (got '" +
                                              cfg.sources.front() + "')");
  }
}

}  // namespace ddft::sender
