"""dd_reconcile's program (scripts/dd_reconcile runs cli.run): what became of every file a send
manifest names, from the receive logs.

  inputs       files plain or gzip-compressed, read as lines of bytes; bytes to text
  manifest     the send manifest: one Entry a line
  receive_log  the receive logs: the lines that matter as events, each receiver's in time order
  matching     each receiver's events against the manifest lines, then one outcome a line
  outcomes     the outcomes a line can get
  report       the table and summary, or JSON Lines
  cli          the options, the checks of the input, the exit status
"""
