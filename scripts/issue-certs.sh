#!/usr/bin/env bash
# issue-certs.sh: a private CA and per-role, per-node certificates for CoDL's mTLS, and per-role
# bearer tokens (docs/security.md). Every certificate names its holder in a URI SAN, which is
# all the daemons use to decide what it may call:
#   codl://controller          the controller       (serverAuth + clientAuth: it dials agents)
#   codl://agent/ID            the agent of node ID (serverAuth + clientAuth: it dials back)
#   codl://user-read/NAME      a reader             (clientAuth only)
#   codl://user-submit/NAME    a submitter          (clientAuth only)
#   codl://admin/NAME          an administrator     (clientAuth only)
# Usage:
#   issue-certs.sh DIR ca                                   # DIR/ca.pem, DIR/ca.key (keep offline)
#   issue-certs.sh DIR controller [HOST|IP ...]             # DIR/controller.{pem,key}
#   issue-certs.sh DIR agent ID [HOST|IP ...]               # DIR/agent-ID.{pem,key}
#   issue-certs.sh DIR user-read|user-submit|admin NAME     # DIR/ROLE-NAME.{pem,key}
#   issue-certs.sh DIR token ROLE ID                        # DIR/token-ROLE-ID (0600) + prints
#                                                           # the tokens-file line (ID "-": none)
# HOST/IP are the names the peer dials (DNS or IP SANs). Keys are written 0600. Give each node
# its own agent certificate: the controller binds an agent certificate to its id, so a stolen
# one cannot register as another node. (codl://agent/* makes a pool-wide agent certificate —
# weaker; docs/security.md.)
set -euo pipefail

die() { echo "issue-certs.sh: $*" >&2; exit 2; }
[[ $# -ge 2 ]] || die "usage: issue-certs.sh DIR ca|controller|agent|user-read|user-submit|admin|token ..."
dir=$1 kind=$2
shift 2
mkdir -p "$dir"
umask 077
command -v openssl >/dev/null || die "openssl not found"

valid_id() { [[ $1 =~ ^[A-Za-z0-9._-]+$ || $1 == "*" ]]; }

# A SAN list: the codl:// identity first, then DNS/IP names.
sans() {
  local uri=$1 list
  shift
  list="URI:$uri"
  for n in "$@"; do
    if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then list+=",IP:$n"; else list+=",DNS:$n"; fi
  done
  echo "$list"
}

# issue NAME URI EKU [HOST...]: a P-256 key and a certificate signed by DIR/ca.
issue() {
  local name=$1 uri=$2 eku=$3
  shift 3
  [[ -f $dir/ca.pem && -f $dir/ca.key ]] || die "no CA in $dir: run 'issue-certs.sh $dir ca' first"
  cat >"$dir/$name.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$eku
subjectAltName=$(sans "$uri" "$@")
EXT
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$name" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 365 -out "$dir/$name.pem" -extfile "$dir/$name.ext" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
  chmod 0644 "$dir/$name.pem"
  echo "$dir/$name.pem ($uri)"
}

case $kind in
  ca)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 3650 -subj "/CN=codl-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      2>/dev/null
    chmod 0644 "$dir/ca.pem"
    echo "$dir/ca.pem (keep $dir/ca.key off the nodes)"
    ;;
  controller)
    issue controller "codl://controller" "serverAuth,clientAuth" "$@"
    ;;
  agent)
    [[ $# -ge 1 ]] && valid_id "$1" || die "agent needs an ID ([A-Za-z0-9._-]+)"
    id=$1
    shift
    issue "agent-${id/\*/any}" "codl://agent/$id" "serverAuth,clientAuth" "$@"
    ;;
  user-read | user-submit | admin)
    [[ $# -eq 1 && $1 != "*" ]] && valid_id "$1" || die "$kind needs a NAME ([A-Za-z0-9._-]+)"
    issue "$kind-$1" "codl://$kind/$1" "clientAuth"
    ;;
  token)
    [[ $# -eq 2 ]] || die "token needs ROLE ID (ID '-' for the controller)"
    role=$1 id=$2
    case $role in controller | agent | user-read | user-submit | admin) ;; *) die "unknown role $role" ;; esac
    [[ $id == "-" ]] && name=none || name=$id
    [[ $id == "-" ]] || valid_id "$id" || die "bad id '$id'"
    file="$dir/token-$role-$name"
    openssl rand -hex 32 | tr -d '\n' >"$file"
    echo "# $file: give it to the $role as --token-file; add this line to the server's tokens file:" >&2
    echo "$role $id $(openssl dgst -sha256 -r "$file" | cut -d' ' -f1)"
    ;;
  *) die "unknown kind '$kind'" ;;
esac
