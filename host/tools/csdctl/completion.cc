// SPDX-License-Identifier: MIT
// completion.cc - csdctl completion bash: the bash completion script of the command tree.
#include "csdctl.hpp"

namespace csdctl {

// The bash completion script for this command tree: every command's subcommands and
// options, the values of options that take names (choices, keyed "csdctl run reduce --op"
// or, for global options, "--front-end"), files elsewhere.
std::string bash_completion(const CLI::App &app, const std::map<std::string, std::vector<std::string>> &choices)
{
    std::string subs, opts, valued;
    std::function<void(const CLI::App &, const std::string &)> walk = [&](const CLI::App &a, const std::string &path) {
        std::string names, flags;
        for (const CLI::App *sub : a.get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); })) {
            names += (names.empty() ? "" : " ") + sub->get_name();
        }
        for (const CLI::Option *opt : a.get_options([](const CLI::Option *x) { return !x->get_positional(); })) {
            std::vector<std::string> all;
            for (const auto &l : opt->get_lnames()) all.push_back("--" + l);
            for (const auto &sn : opt->get_snames()) all.push_back("-" + sn);
            for (const auto &n : all) {
                flags += (flags.empty() ? "" : " ") + n;
                if (opt->get_type_size_max() > 0) valued += " " + n;
            }
        }
        subs += "    [\"" + path + "\"]=\"" + names + "\"\n";
        opts += "    [\"" + path + "\"]=\"" + flags + "\"\n";
        for (const CLI::App *sub : a.get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); })) {
            walk(*sub, path + " " + sub->get_name());
        }
    };
    walk(app, "csdctl");
    std::string ch;
    for (const auto &c : choices) {
        std::string v;
        for (const auto &x : c.second) v += (v.empty() ? "" : " ") + x;
        ch += "    [\"" + c.first + "\"]=\"" + v + "\"\n";
    }
    return "# bash completion for csdctl (written by `csdctl completion bash`)\n"
           "declare -gA _csdctl_subs=(\n" + subs + ")\n"
           "declare -gA _csdctl_opts=(\n" + opts + ")\n"
           "declare -gA _csdctl_choices=(\n" + ch + ")\n"
           "_csdctl_valued=\"" + valued + " \"\n"
           R"(_csdctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path=csdctl w i
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $_csdctl_valued == *" $w "* ]]; then ((i++)); continue; fi
        [[ -n ${_csdctl_subs["$path $w"]+x} ]] && path="$path $w"
    done
    if [[ $_csdctl_valued == *" $prev "* ]]; then
        if [[ -n ${_csdctl_choices["$path $prev"]+x} ]]; then
            COMPREPLY=($(compgen -W "${_csdctl_choices["$path $prev"]}" -- "$cur"))
        elif [[ -n ${_csdctl_choices[$prev]+x} ]]; then
            COMPREPLY=($(compgen -W "${_csdctl_choices[$prev]}" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${_csdctl_opts[$path]} ${_csdctl_opts[csdctl]}" -- "$cur"))
    elif [[ -n ${_csdctl_subs[$path]} ]]; then
        COMPREPLY=($(compgen -W "${_csdctl_subs[$path]}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _csdctl csdctl
)";
}

// A command as typed: "run filter", "put".
std::string command_path(const CLI::App &a)
{
    std::string p = a.get_name();
    for (const CLI::App *up = a.get_parent(); up && up->get_parent(); up = up->get_parent()) p = up->get_name() + " " + p;
    return "csdctl " + p;
}

}  // namespace csdctl
