"""No future history: an instance image whose repository holds nothing newer than
``base_commit`` (real SWE-bench images keep the whole clone, fix included, in later commits,
tags, refs, reflogs or unreachable objects). ``images.InstanceImages`` rebuilds every image once
with ``HISTORY_SCRIPT`` run over its repository and marks it ``HISTORY_LABEL``.

Contracts:
- ``history_dockerfile(image, base_commit, user, repo)``: ``FROM image``, the script run as root
  (``user`` restored after), ``HISTORY_LABEL`` set; ``ValueError`` for a non-hex ``base_commit``.
- What the script leaves, or it fails (exit 3, the reason on stderr) and the build with it:
  - HEAD is ``base_commit`` (an image whose HEAD is elsewhere is refused), on its branch when it
    was on one (no other branch), else detached;
  - the only other refs are tags into ``base_commit``'s history, annotated ones made no later
    than it (``git describe`` and setuptools-scm versions stay as graded upstream);
  - no remote (nor ``branch.*`` config), stash, notes, replace refs, reflog, ``*_HEAD``, commit
    messages, rerere cache, linked worktrees, grafts, alternates, commit-graph or multi-pack
    index;
  - one pack of exactly the objects the kept refs and the index reach;
  - the work tree, index, ``.git/config`` (less the remotes), hooks, ``info/exclude`` and
    ``.git/modules`` untouched: untracked files and uncommitted changes stay.
"""

from __future__ import annotations

import json
import shlex

from ratchet_ray.suites.swebench.dataset import COMMIT_ID

HISTORY_LABEL = "ratchet-ray.history"
# Bumped whenever HISTORY_SCRIPT changes what it removes: images marked by an older script are
# rebuilt from their parent the next time they are used.
HISTORY_VERSION = "1"
# Every line the script prints (its result, or why it refused) starts with this.
HISTORY_SAYS = "ratchet-history:"

HISTORY_SCRIPT = r"""
set -euo pipefail
repo=__REPO__
base=__BASE__
fail() { echo "ratchet-history: $*" >&2; exit 3; }
# No hook of the image runs, no automatic gc, and no reflog is written by what follows.
g() { git -c core.hooksPath=/dev/null -c gc.auto=0 -c core.logAllRefUpdates=false \
          -c safe.directory='*' -c "safe.directory=$repo" "$@"; }
command -v git >/dev/null || fail "git is not installed in the image"
cd "$repo" 2>/dev/null || fail "$repo does not exist in the image"
g rev-parse --show-toplevel >/dev/null 2>&1 || fail "$repo is not a git work tree"
gitdir=$(g rev-parse --absolute-git-dir)
base_sha=$(g rev-parse --verify --quiet "$base^{commit}") \
  || fail "base_commit $base is not a commit of the repository in $repo"
head_sha=$(g rev-parse --verify --quiet HEAD) || fail "HEAD of $repo is not a commit"
[ "$head_sha" = "$base_sha" ] || fail "HEAD of $repo is $head_sha, not base_commit $base_sha: \
the image does not hold the instance's checkout"
branch=$(g symbolic-ref -q HEAD || true)
base_time=$(g show -s --format=%ct "$base_sha")

# Refs kept, as "<object> <refname>": HEAD's branch, and the tags of base's own history that
# existed by then (an annotated tag's date must not be later than the base commit's).
kept=$(g for-each-ref --merged="$base_sha" \
         --format='%(objectname) %(refname) %(objecttype) %(taggerdate:unix)' refs/tags \
       | awk -v t="$base_time" '$3 == "commit" || ($3 == "tag" && $4 != "" && $4 + 0 <= t + 0) {print $1, $2}')
if [ -n "$branch" ]; then kept=$(printf '%s %s\n%s' "$base_sha" "$branch" "$kept"); fi

for r in $(g remote || true); do g config --remove-section "remote.$r" 2>/dev/null || true; done
for s in $(g config --name-only --get-regexp '^branch\.' 2>/dev/null \
             | sed -E 's/^(branch\..*)\.[^.]+$/\1/' | sort -u || true); do
  g config --remove-section "$s" 2>/dev/null || true
done

# Every ref, reflog and piece of operation state goes; the kept refs are written back.
rm -rf "$gitdir/refs" "$gitdir/packed-refs" "$gitdir/logs" "$gitdir/worktrees" \
       "$gitdir/rebase-merge" "$gitdir/rebase-apply" "$gitdir/sequencer" "$gitdir/rr-cache" \
       "$gitdir/lost-found" "$gitdir/branches" "$gitdir/remotes" "$gitdir/svn" \
       "$gitdir/gitk.cache" "$gitdir/info/refs" "$gitdir/info/grafts" \
       "$gitdir/objects/info/packs" "$gitdir/objects/info/commit-graph" \
       "$gitdir/objects/info/commit-graphs" "$gitdir/objects/pack/multi-pack-index"
find "$gitdir" -maxdepth 1 -type f \( -name '*_HEAD' -o -name 'BISECT_*' -o -name '*_MSG' \
     -o -name '*EDITMSG' -o -name 'MERGE_*' -o -name 'AUTO_MERGE' \) -delete
mkdir -p "$gitdir/refs/heads" "$gitdir/refs/tags"
printf '%s\n' "$kept" | awk 'NF == 2 {print "create", $2, $1}' | g update-ref --stdin

# One pack of what the kept refs and the index reach (objects of alternates copied in), then
# every other object is deleted. Kept, promisor and cruft markers would shelter old packs.
find "$gitdir/objects/pack" -maxdepth 1 -type f \
     \( -name '*.keep' -o -name '*.promisor' -o -name '*.mtimes' \) -delete
g repack -a -d -q -n
rm -f "$gitdir/objects/info/alternates" "$gitdir/objects/info/http-alternates"
g prune --expire=now
rm -rf "$gitdir/logs"

[ "$(g rev-parse HEAD)" = "$base_sha" ] || fail "HEAD moved while the history was removed"
beyond=$(g rev-list --all --not "$base_sha" | head -n 1)
[ -z "$beyond" ] || fail "commit $beyond outside base_commit's history is still referenced"
g cat-file -e "$base_sha^{tree}" || fail "the tree of base_commit is missing"
echo "ratchet-history: $repo at $base_sha; kept $(printf '%s\n' "$kept" | grep -c . || true) refs; \
$(g count-objects -v | tr '\n' ' ')"
"""


def history_mark(base_commit: str) -> str:
    """The ``HISTORY_LABEL`` value of an image stripped to ``base_commit`` by this version."""
    return f"v{HISTORY_VERSION}:{base_commit}"


def history_dockerfile(image: str, base_commit: str, user: str | None, repo: str) -> str:
    """A Dockerfile deriving from ``image`` whose repository at ``repo`` holds no history after
    ``base_commit`` (module contract); ``user`` is the image's configured user."""
    if not COMMIT_ID.match(base_commit or ""):
        raise ValueError(f"base_commit {base_commit!r} is not a hex commit id")
    script = (HISTORY_SCRIPT.replace("__REPO__", shlex.quote(repo))
              .replace("__BASE__", shlex.quote(base_commit)))
    as_root = bool(user) and user not in ("root", "0", "0:0")
    lines = [f"FROM {image}"]
    if as_root:
        lines.append("USER root")
    # The exec form: the script reaches bash verbatim, whatever SHELL the image sets.
    lines.append("RUN " + json.dumps(["/bin/bash", "-c", script]))
    if as_root:
        lines.append(f"USER {user}")
    lines.append(f"LABEL {HISTORY_LABEL}={json.dumps(history_mark(base_commit))}")
    return "\n".join(lines) + "\n"
