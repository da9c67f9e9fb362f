#!/usr/bin/env bash
# Opens the HTML walkthrough that `report` writes in headless Chromium (Debian's `chromium`) and
# checks what a reader would see: the page loads with no network, its script runs, every stage has
# its section and its picture (an inline SVG), and a screenshot can be taken.
#   report_chromium.sh FXPLAIN SCRIPT.fx [SHOT.png]
# Exits 77 (skipped) when Chromium is not installed. With SHOT.png, keeps the screenshot there.
set -u
fx=$1
script=$2
keep=${3:-}
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "chromium is not installed: skipping (scripts/install-deps.sh installs it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FXPLAIN_OUT_DIR="$tmp" FXPLAIN_HISTORY=/dev/null NO_COLOR=1
# The walkthrough script, then every remaining pass, then the page.
if ! "$fx" "$script" -e "step all; report $tmp/report.html" > "$tmp/log" 2>&1; then
  echo "fxplain failed:"; cat "$tmp/log"; exit 1
fi
[ -s "$tmp/report.html" ] || { echo "no report written"; cat "$tmp/log"; exit 1; }
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
       --user-data-dir="$tmp/profile" --virtual-time-budget=3000)
if ! timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/report.html" > "$tmp/dom.html" 2> "$tmp/chromium.log"; then
  echo "chromium --dump-dom failed:"; tail -20 "$tmp/chromium.log"; exit 1
fi
stages=$(grep -o 'href="#stage-[0-9]*">[0-9]' "$tmp/report.html" | wc -l)
sections=$(grep -o '<section class="stage[^"]*" id="stage-[0-9]*"' "$tmp/dom.html" | wc -l)
echo "report: $stages stages in the summary, $sections sections in Chromium's DOM"
[ "$stages" -ge 2 ] || { echo "expected at least two stages"; exit 1; }
[ "$sections" -eq "$stages" ] || { echo "sections ($sections) != stages ($stages)"; exit 1; }
# Every stage's section holds its picture: split the DOM at each section and look for an <svg>.
missing=$(awk -v RS='<section ' 'NR > 1 { match($0, /id="stage-[0-9]+"/); id = substr($0, RSTART + 4, RLENGTH - 5);
            if (index($0, "<svg") == 0) print id }' "$tmp/dom.html")
if [ -n "$missing" ]; then echo "stages without a picture: $missing"; exit 1; fi
# The script ran: it marks the current stage and fills the decision counts.
grep -q 'class="stage current"' "$tmp/dom.html" || { echo "the page's script did not run (no current stage)"; exit 1; }
grep -q '[0-9]* shown</span>' "$tmp/dom.html" || { echo "the decision filters did not run"; exit 1; }
# Nothing is fetched from the network.
if grep -qE '<(link|img|script)[^>]* (src|href)="https?:' "$tmp/report.html"; then echo "the page fetches from the network"; exit 1; fi
if ! timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --window-size=1400,1800 --screenshot="$tmp/shot.png" \
     "file://$tmp/report.html" > /dev/null 2>> "$tmp/chromium.log"; then
  echo "chromium --screenshot failed:"; tail -20 "$tmp/chromium.log"; exit 1
fi
size=$(wc -c < "$tmp/shot.png")
[ "$size" -gt 20000 ] || { echo "screenshot too small ($size bytes)"; exit 1; }
echo "screenshot: $size bytes; every stage has its picture"
if [ -n "$keep" ]; then cp "$tmp/shot.png" "$keep"; echo "kept $keep"; fi
# XLA's steps (a real dump's priority-fusion log): the page's script shows the current step's
# picture, the pair highlighted, and stepping shows the next one's.
if ! "$fx" -e "load tests/xla_dumps/data/mlp; goto priority-fusion; report $tmp/xla.html" > "$tmp/log" 2>&1; then
  echo "fxplain failed on the XLA dump:"; cat "$tmp/log"; exit 1
fi
cat >> "$tmp/xla.html" <<'JS'
<script>document.getElementById('xla-steps-2').querySelectorAll('.xs-next').forEach(function(b){for(var i=0;i<6;i++)b.click();});</script>
JS
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/xla.html" > "$tmp/xdom.html" 2>> "$tmp/chromium.log"
shown=$(awk -v RS='<div class="xla-picture"' 'NR == 2' "$tmp/xdom.html" | awk -v RS='<div class="xla-table-wrap"' 'NR == 1')
grep -q '<svg' <<<"$shown" || { echo "the XLA step's picture is not shown"; exit 1; }
grep -q '7 / 9' "$tmp/xdom.html" || { echo "stepping to XLA's step 7 did not happen"; exit 1; }
grep -q 'XLA step 7: fusion, making triton_softmax.2' <<<"$shown" || { echo "step 7 shows another step's picture"; exit 1; }
echo "XLA's steps: step 7 shows its picture"
exit 0
