#!/usr/bin/env bash
# Nothing on the user's PATH is writable: a directory on the caller's PATH inside a writable
# root (the workspace, an allowWrite) is guarded, existing or not; the rest of the root stays
# writable. A relative PATH entry is said. And ~/bin, ~/.local/bin, which the default ~/.profile
# puts on PATH when they exist, are guarded when home is writable.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WS/tools" "$SCRATCH/extra/bin"
echo 'echo real' > "$WS/tools/hello"; chmod +x "$WS/tools/hello"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s"]}}}' "$SCRATCH/extra" > "$SCRATCH/s.json"
P="$WS/tools:$WS/later/bin:$SCRATCH/extra/bin:/usr/local/bin:/usr/bin:/bin"

OUT=$(cd "$WS" && PATH="$P" "$WAVEBOX" run --settings "$SCRATCH/s.json" -- sh -c '
  echo evil > tools/hello; echo "rc1=$?"
  echo evil > tools/ls; echo "rc2=$?"
  mkdir -p later/bin; echo "rc3=$?"
  echo evil > "$0/extra/bin/ls"; echo "rc4=$?"
  echo fine > "$0/extra/note"; echo "rc5=$?"
  echo fine > ok.txt; echo "rc6=$?"' "$SCRATCH" 2>&1)
check "a program on PATH in the workspace cannot be rewritten" grep -qx "echo real" "$WS/tools/hello"
check "nor a new one added there" test ! -e "$WS/tools/ls"
check "a PATH directory that does not exist yet cannot be made" test ! -e "$WS/later/bin"
check "a PATH directory inside an allowWrite root is guarded" test ! -e "$SCRATCH/extra/bin/ls"
check "the rest of that root stays writable" grep -qx fine "$SCRATCH/extra/note"
check "the workspace stays writable" grep -qx fine "$WS/ok.txt"
check "the block names the PATH guard" grep -q "deny file-write $WS/tools/ls" <<<"$OUT"

# An entry that is a link into the workspace (or lies below one): the directory it names is.
mkdir -p "$WS/linked"
ln -s "$WS/linked" "$SCRATCH/via-link"
ln -s "$WS" "$SCRATCH/ws-link"
(cd "$WS" && PATH="$SCRATCH/via-link:$SCRATCH/ws-link/deep/bin:/usr/bin:/bin" "$WAVEBOX" run -- sh -c \
  'echo evil > linked/ls; mkdir -p deep/bin; echo evil > deep/bin/ls' >/dev/null 2>&1)
check "a PATH entry that is a link into the workspace: its target is guarded" test ! -e "$WS/linked/ls"
check "a PATH entry below a link into the workspace: guarded, though missing" test ! -e "$WS/deep/bin/ls"

# Entries the kernel walks differently from their text (found by attacking the rule).
plant() {  # plant DESCRIPTION PATH-ENTRY [settings] -- script (run in the workspace)
  local what=$1 entry=$2; shift 2
  local set=(); if [ "$1" != -- ]; then set=(--settings "$1"); shift; fi; shift
  (cd "$WS" && PATH="$entry:/usr/bin:/bin" "$WAVEBOX" run "${set[@]}" -- sh -c "$1" >/dev/null 2>&1)
}
plant dotdot "$WS/sub/../dd" -- 'mkdir -p x/y x/dd; ln -s x/y sub; echo evil > x/dd/ls'
check "an entry with .. after a missing name: that name cannot be made (the entry cannot be led elsewhere)" \
  bash -c '[ ! -e "$0/sub" ] && [ ! -L "$0/sub" ]' "$WS"
mkdir -p "$SCRATCH/g/bin"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s/g/*"]}}}' "$SCRATCH" > "$SCRATCH/glob.json"
plant glob "$SCRATCH/g/bin" "$SCRATCH/glob.json" -- "echo evil > '$SCRATCH/g/bin/ls'"
check "a PATH directory inside an allowWrite glob is guarded" test ! -e "$SCRATCH/g/bin/ls"
mkdir -p "$SCRATCH/wr/bin"; ln -s "$SCRATCH/wr" "$SCRATCH/wl"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s/wl"]}}}' "$SCRATCH" > "$SCRATCH/wl.json"
plant linkroot "$SCRATCH/wr/bin" "$SCRATCH/wl.json" -- "echo evil > '$SCRATCH/wr/bin/ls'"
check "a PATH directory inside an allowWrite that is a link is guarded" test ! -e "$SCRATCH/wr/bin/ls"
plant tilde "~/proj/tbin" -- 'mkdir -p tbin; echo evil > tbin/ls'
check "a ~ entry (bash expands it) is guarded" test ! -e "$WS/tbin/ls"
ln -s "$WS/dangle" "$SCRATCH/dl"
plant dangling "$SCRATCH/dl" -- 'mkdir -p dangle; echo evil > dangle/ls'
check "an entry that is a dangling link into the workspace: its target is guarded" test ! -e "$WS/dangle/ls"
deep=$(printf 'x/%.0s' $(seq 1 70))
ln -s "$WS" "$SCRATCH/l6"
plant deep "$SCRATCH/l6/${deep}bin" -- "mkdir -p '${deep}bin' && echo evil > '${deep}bin/ls'"
check "a deep missing entry below a link: guarded" test ! -e "$WS/${deep}bin/ls"

# A link inside the workspace on the way to a PATH directory: re-pointed, it would lead the entry
# elsewhere; it cannot be pinned, so the run is refused (fail closed), saying why.
mkdir -p "$WS/real/bin"; ln -s real "$WS/lnk"
OUT=$(cd "$WS" && PATH="$WS/lnk/bin:/usr/bin:/bin" "$WAVEBOX" run -- sh -c 'rm lnk; mkdir -p evil/bin; ln -s evil lnk; echo x > evil/bin/ls' 2>&1)
RC=$?
check "a link on the way to a PATH directory: the run is refused (125), saying so" \
  bash -c '[ "$0" -eq 125 ] && grep -q "lnk.*symbolic link" <<<"$1"' "$RC" "$OUT"
check "... and nothing was planted" bash -c '[ ! -e "$0/evil" ] && [ "$(readlink "$0/lnk")" = real ]' "$WS"
rm -rf "$WS/lnk" "$WS/real"

OUT=$(cd "$WS" && PATH=".:/usr/bin:/bin" "$WAVEBOX" run -- true 2>&1)
check "a relative PATH entry is said" grep -q 'PATH holds the relative entry "\."' <<<"$OUT"
OUT=$(cd "$WS" && PATH="/usr/local/bin:/usr/bin:/bin" "$WAVEBOX" run -- true 2>&1)
check "an ordinary PATH: nothing said" [ -z "$OUT" ]

# allowWrite ~: home stays read-only (~/bin and ~/.local/bin above all).
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["~"]}}}' > "$SCRATCH/home.json"
(cd "$WS" && PATH=/usr/bin:/bin "$WAVEBOX" run --settings "$SCRATCH/home.json" -- sh -c \
  'mkdir -p ~/bin ~/.local/bin; echo x > ~/bin/ls; echo x > ~/.local/bin/ls; echo y > ~/note' >/dev/null 2>&1)
check "home writable: ~/bin is not made" test ! -e "$HOME/bin/ls"
check "home writable: ~/.local/bin gets nothing" test ! -e "$HOME/.local/bin/ls"
check "allowWrite ~: the rest of home stays read-only too" test ! -e "$HOME/note"
# allowWrite of a directory above home (/home, or a /tmp that holds it): home is guarded whole,
# the directories named inside it stay writable, the rest of the root too.
above=$(dirname "$HOME")
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s"]}}}' "$above" > "$SCRATCH/above.json"
mkdir -p "$HOME/proj"
for i in 1 2; do
  OUT=$(cd "$HOME/proj" && PATH=/usr/bin:/bin "$WAVEBOX" run --settings "$SCRATCH/above.json" -- sh -c \
    'echo x > ~/.bash_logout; echo x > ~/plain.txt; mkdir -p ~/bin; echo y > ~/proj/made; echo z > "$0/beside-home"' "$above" 2>&1)
  check "above home, run $i: home is guarded" bash -c '[ ! -e "$0/.bash_logout" ] && [ ! -e "$0/bin" ] && [ ! -e "$0/plain.txt" ]' "$HOME"
  check "above home, run $i: and said as such" grep -q "deny file-write $HOME/plain.txt (protected: the home directory" <<<"$OUT"
done
check "above home: the workspace inside home is writable" grep -qx y "$HOME/proj/made"
check "above home: the rest of the writable root is" grep -qx z "$above/beside-home"
finish
