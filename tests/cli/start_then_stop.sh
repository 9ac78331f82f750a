#!/bin/sh
# Runs a receiver (the arguments) until it logs that it is receiving, then stops it with SIGINT
# and prints what it wrote and "status N" (its exit status). Gives up after 20 s (status 124).
out=$(mktemp) || exit 1
"$@" > "$out" 2>&1 &
pid=$!
i=0
until grep -q "receiving on" "$out"; do
  if [ $i -ge 200 ] || ! kill -0 "$pid" 2> /dev/null; then break; fi
  sleep 0.1
  i=$((i + 1))
done
kill -INT "$pid" 2> /dev/null
wait "$pid"
status=$?
[ $i -ge 200 ] && status=124
cat "$out"
rm -f "$out"
echo "status $status"
