# fish completion for wavebox
set -l subs run wrap decide connect doctor serve trust srt
complete -c wavebox -f -n "not __fish_seen_subcommand_from $subs" -a "$subs"
for s in run wrap decide
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l settings -r -F -d 'settings file'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l cwd -r -a '(__fish_complete_directories)' -d 'the workspace'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l allow-write -r -F -d 'an extra writable path'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l allow-domain -r -d 'a host for this run only'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l network -r -a 'off allowlist'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l network-only -d 'filesystem rules off'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l pass-env -r -d 'pass a credential variable'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l report-json -r -F -d 'write a JSON report'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l approve -d 'the user approved an ask rule'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -l no-prompt -d 'never ask on the terminal'
  complete -c wavebox -n "__fish_seen_subcommand_from $s" -s v -l verbose
end
complete -c wavebox -n "__fish_seen_subcommand_from doctor" -l json -d 'machine-readable'
complete -c wavebox -n "__fish_seen_subcommand_from serve" -l stdio -d 'JSON-RPC on stdin and stdout'
complete -c wavebox -n "__fish_seen_subcommand_from trust" -l revoke -d 'no longer trust the folder'
complete -c wavebox -n "__fish_seen_subcommand_from trust" -l list -d 'print the trusted folders'
