# bash completion for wavebox
_wavebox() {
  local cur prev sub
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  sub=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "run wrap decide connect doctor serve trust srt --help --version" -- "$cur"))
    return
  fi
  case $prev in
    --settings|--report-json) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --cwd|--allow-write) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --network) COMPREPLY=($(compgen -W "off allowlist" -- "$cur")); return ;;
  esac
  case $sub in
    run|wrap|decide)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--settings --cwd --allow-write --allow-domain --network --network-only --pass-env
          --report-json --approve --no-prompt --dangerously-disable-sandbox -c -v --verbose --help --" -- "$cur"))
      else
        COMPREPLY=($(compgen -c -- "$cur"))
      fi ;;
    doctor) COMPREPLY=($(compgen -W "--json --settings --cwd -v --verbose --help" -- "$cur")) ;;
    trust) COMPREPLY=($(compgen -d -W "--revoke --list --help" -- "$cur")) ;;
    serve) COMPREPLY=($(compgen -W "--stdio -v --verbose --help" -- "$cur")) ;;
  esac
}
complete -F _wavebox wavebox
