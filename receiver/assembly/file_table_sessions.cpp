// The file table's sessions: each live sender session's parts (FileTable::Scope), and the packets
// that concern a session as a whole (its file lists, its history, its resends).
#include <fmt/format.h>

#include "receiver/assembly/file_table.hpp"

namespace ddft::receiver {

FileTable::Scope::Scope(FileTable& t, uint64_t s, const SenderSession* g)
    : session(s),
      gate(g),
      known(t.settled_),
      lanes(t.cfg_),
      admission(t.cfg_, t.out_, t.records_, t.counters_, files, known, t.files_),
      listed(t.cfg_, t.out_, t.records_, t.clock_, t.counters_, files, known, t.files_),
      history(t.out_, t.fs_, t.clock_, t.counters_, known, t.files_, listed, t.records_) {
  known.start_session(s);
  lanes.set_gate(g);
  listed.set_gate(g);
  history.set_gate(g);
  history.set_journal(t.journal_);
}

void FileTable::start_session(uint64_t s, const SenderSession* gate) {
  auto& sc = scopes_[s];
  if (cur_ == sc.get()) cur_ = nullptr;
  sc = std::make_unique<Scope>(*this, s, gate);
}

void FileTable::end_session(uint64_t s, bool receiver_stopping) {
  auto it = scopes_.find(s);
  if (it == scopes_.end()) return;
  it->second->listed.end_session(receiver_stopping);
  records_.forget_unnamed(s);
  if (cur_ == it->second.get()) cur_ = nullptr;
  scopes_.erase(it);
}

void FileTable::settle_lists(uint64_t s) {
  if (Scope* sc = scope_of(s)) sc->listed.end_session(/*receiver_stopping=*/false);
}

void FileTable::settle_lists(bool receiver_stopping) {
  for (auto& [s, sc] : scopes_) sc->listed.end_session(receiver_stopping);
}

void FileTable::fail_receiving(const std::string& reason) {
  std::vector<File*> open;
  for (auto& [key, f] : files_) {
    if (f->state == FileState::kReceiving) open.push_back(f.get());
  }
  for (File* f : open) fail(*f, reason);
}

void FileTable::fail_receiving(uint64_t s, const std::string& reason) {
  // Files still receiving never get the rest of their data. Those whose end came are only
  // waiting for their writes: they finish on their own (they are keyed by session, so a new
  // session's files cannot clash with them).
  std::vector<File*> open;
  for (auto it = files_.lower_bound({s, 0}); it != files_.end() && it->first.first == s; ++it) {
    if (it->second->state == FileState::kReceiving) open.push_back(it->second.get());
  }
  for (File* f : open) fail(*f, reason);
}

FileTable::Scope* FileTable::scope_of(uint64_t s) {
  auto it = scopes_.find(s);
  return it == scopes_.end() ? nullptr : it->second.get();
}

FileTable::Scope* FileTable::select(const common::Packet& p) {
  if (cur_ == nullptr || cur_->session != p.header.session_id) {
    cur_ = scope_of(p.header.session_id);
  }
  return cur_;
}

const FileLanes& FileTable::lanes_of(const File& f) const {
  auto it = scopes_.find(f.session);
  return it == scopes_.end() ? one_lane_ : it->second->lanes;
}

SessionFiles* FileTable::tally(uint64_t s) {
  Scope* sc = scope_of(s);
  return sc == nullptr ? nullptr : &sc->files;
}

SessionFiles FileTable::session_files(uint64_t s) const {
  auto it = scopes_.find(s);
  return it == scopes_.end() ? SessionFiles{} : it->second->files;
}

void FileTable::handle_file_list(const common::Packet& p, size_t lane) {
  if (Scope* sc = select(p)) sc->listed.handle(p, lane);
}

void FileTable::handle_history(const common::Packet& p) {
  if (Scope* sc = select(p)) sc->history.handle_history(p);
}

void FileTable::handle_resend(const common::Packet& p) {
  if (Scope* sc = select(p)) sc->history.handle_resend(p);
}

bool FileTable::holds_list_entries(uint64_t s) const {
  auto it = scopes_.find(s);
  return it != scopes_.end() && it->second->listed.holds_any();
}

size_t FileTable::in_flight(uint64_t s) const {
  size_t n = 0;
  for (auto it = files_.lower_bound({s, 0}); it != files_.end() && it->first.first == s; ++it) {
    ++n;
  }
  return n;
}

}  // namespace ddft::receiver
