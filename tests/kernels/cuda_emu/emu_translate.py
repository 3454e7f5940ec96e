#!/usr/bin/env python3
"""Turns one CUDA source (.cu) into C++ that g++ compiles against cuda_emu.h (force-included),
so its kernels run on the CPU emulator of this folder. Three rewrites, nothing else:
  kernel<<<grid, block[, shared[, stream]]>>>(args)  ->  ::emu::launch(kernel, grid, block[, ...])(args)
  extern __shared__ [__align__(N)] T name[];         ->  T* name = ::emu::dynamic_shared<T>();
  __shared__ [__align__(N)] T a[X][Y], b[Z];         ->  static char emu_tag_a; auto& a =
                                                         ::emu::block_shared<T[X][Y]>(&emu_tag_a); (each)
A launch of a kernel template by its bare name (its arguments deduced, as nvcc does) becomes
::emu::launch_deduced(grid, ...)([](auto&&... a) { kernel(a...); }, args), since a template
name cannot be passed as a pointer.
Line numbers are kept (a #line directive first, and every rewritten span keeps its newlines),
so compiler messages and the emulator's reports point into the original file.
usage: emu_translate.py IN.cu OUT.cpp"""
import re
import sys

LAUNCH = re.compile(r"(?P<kernel>[A-Za-z_][\w:]*(?:<[^;{}()<>]*>)?)\s*<<<(?P<config>.*?)>>>\s*\(", re.S)
DYNAMIC_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?(?P<type>[\w:]+(?:\s+[\w:]+)*?)\s+(?P<name>\w+)\s*\[\s*\]\s*;")


def keep_lines(match, text):
    return text + "\n" * match.group(0).count("\n")


TEMPLATE_KERNEL = re.compile(
    r"template\s*<[^;{}]*?>\s*__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def launch(match, template_kernels, source):
    kernel = match.group("kernel")
    config = " ".join(match.group("config").split())
    if kernel not in template_kernels:
        return keep_lines(match, "::emu::launch(%s, %s)(" % (kernel, config))
    no_args = source[match.end():].lstrip().startswith(")")
    return keep_lines(match, "::emu::launch_deduced(%s)([](auto&&... emu_args) { %s(emu_args...); }%s" % (
        config, kernel, "" if no_args else ", "))


STATIC_SHARED = re.compile(
    r"(?<!extern )__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?(?P<type>[\w:]+)\s+(?P<declarators>[^;]+);")
DECLARATOR = re.compile(r"^\s*(?P<name>\w+)\s*(?P<dims>(?:\[[^\]]+\]\s*)*)$")


def block_shared(match):
    out = []
    for declarator in match.group("declarators").split(","):
        d = DECLARATOR.match(declarator)
        if not d:
            sys.exit("emu_translate.py: cannot rewrite the __shared__ declarator '%s'" % declarator.strip())
        name, dims = d.group("name"), "".join(d.group("dims").split())
        out.append("static char emu_tag_%s; auto& %s = ::emu::block_shared<%s%s>(&emu_tag_%s);" % (
            name, name, match.group("type"), dims, name))
    return keep_lines(match, " ".join(out))


def translate(source):
    template_kernels = set(TEMPLATE_KERNEL.findall(source))
    source = LAUNCH.sub(lambda m: launch(m, template_kernels, source), source)
    source = DYNAMIC_SHARED.sub(lambda m: keep_lines(
        m, "%s* %s = ::emu::dynamic_shared<%s>();" % (m.group("type"), m.group("name"), m.group("type"))), source)
    return STATIC_SHARED.sub(block_shared, source)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: emu_translate.py IN.cu OUT.cpp")
    src, out = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    result = '#line 1 "%s"\n%s' % (src, translate(text))
    if "<<<" in result or "__shared__" in result:
        sys.exit("emu_translate.py: %s: a launch or shared array the rewrite did not match" % src)
    with open(out, "w", encoding="utf-8") as f:
        f.write(result)


if __name__ == "__main__":
    main()
