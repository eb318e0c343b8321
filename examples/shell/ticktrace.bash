# Bash completion for ticktrace-collector, ticktrace-view, ticktrace-demo and
# the example pipeline's programs. Installed by `cmake --install` into
# share/bash-completion/completions/ (one copy per command name, which is how
# bash-completion finds it); or source this file from ~/.bashrc.
#
# Flags and subcommands come from the programs' own --help, so completion
# never lags behind a new flag. Values: file names for paths, the sessions
# that have segments in /dev/shm for --session, and the fixed choices of the
# flags that have them.

# Flags a program's (or subcommand's) --help lists: "  --name ..." lines.
_ticktrace_flags() {
  "$@" --help 2>/dev/null |
    sed -n 's/^[[:space:]]\{1,\}\(--[A-Za-z0-9][A-Za-z0-9-]*\).*/\1/p' | sort -u
}

# ticktrace-view's subcommands: the indented names under "Subcommands:".
_ticktrace_view_subcommands() {
  local subs
  subs=$("$1" --help 2>/dev/null |
    awk '/[Ss]ubcommands/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {exit}')
  [[ -n $subs ]] || subs="summary orders order percentiles runs export top report intervals diff"
  echo "$subs"
}

# Sessions with a segment now: /dev/shm/ticktrace.<session>.<pid>.
_ticktrace_sessions() {
  local f s
  for f in /dev/shm/ticktrace.*.*; do
    [[ -e $f ]] || continue
    s=${f#/dev/shm/ticktrace.}
    echo "${s%.*}"
  done | sort -u
}

_ticktrace_complete() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[0]}
  COMPREPLY=()

  # A flag's value given as --flag=VALUE.
  if [[ $cur == --*=* ]]; then
    prev=${cur%%=*}
    cur=${cur#*=}
  fi
  case $prev in
    --session)
      mapfile -t COMPREPLY < <(compgen -W "$(_ticktrace_sessions)" -- "$cur")
      return ;;
    --detail)
      mapfile -t COMPREPLY < <(compgen -W "all tail none" -- "$cur"); return ;;
    --skew-cores)
      mapfile -t COMPREPLY < <(compgen -W "allowed producers" -- "$cur"); return ;;
    --format)
      mapfile -t COMPREPLY < <(compgen -W "chrome csv hlog json" -- "$cur"); return ;;
    --allow-uid)
      mapfile -t COMPREPLY < <(compgen -u -- "$cur"); return ;;
    --db|--raw|--replay|--out|--bin-dir)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur"); compopt -o filenames 2>/dev/null
      return ;;
    --store)
      if [[ $cur == sqlite:* ]]; then
        mapfile -t COMPREPLY < <(compgen -f -P sqlite: -- "${cur#sqlite:}")
      else
        mapfile -t COMPREPLY < <(compgen -W "sqlite: clickhouse://" -- "$cur")
      fi
      compopt -o nospace 2>/dev/null
      return ;;
    --metrics-listen)
      mapfile -t COMPREPLY < <(compgen -W "127.0.0.1:9464" -- "$cur"); return ;;
  esac

  if [[ ${cmd##*/} == ticktrace-view ]]; then
    # The first word after the program is the subcommand.
    if (( COMP_CWORD == 1 )); then
      local subs
      subs="$(_ticktrace_view_subcommands "$cmd") --help --version"
      mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
      return
    fi
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$(_ticktrace_flags "$cmd" "${COMP_WORDS[1]}")" -- "$cur")
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_ticktrace_flags "$cmd")" -- "$cur")
  fi
}

complete -F _ticktrace_complete ticktrace-collector ticktrace-view ticktrace-demo \
  ticktrace-example-feed ticktrace-example-strategy ticktrace-example-gateway
