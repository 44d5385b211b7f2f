// gpusched/core/config.hpp — header-only (the default) or separately compiled policy families.
//
// gpusched's policy families are header-only: a program includes their headers and links nothing
// (the way Boost.Graph and Eigen are used). Each family's public header declares its functions and
// includes its definitions from a detail/*_impl.hpp header at its end, marked GPUSCHED_DECL, which is
// `inline` here.
//
// A program built from many translation units compiles those definitions again in every unit that
// uses them: gpusched's own build (the tool, the readers, the simulator, the bindings, 11 test units,
// the benchmarks) spent over a quarter of its compile time there (benchmarks/README.md, "CI time"). Defining
// GPUSCHED_SEPARATE_COMPILATION for every unit of a program switches to the other mode, as Boost.Asio's
// ASIO_SEPARATE_COMPILATION does: the public headers stop including the definitions, and exactly one
// unit of the program includes gpusched/compiled.hpp, which compiles every family's definitions once.
// The code is the same in both modes; only where it is compiled moves.
//
// In that mode the other units see plain declarations and link to the definitions compiled once. On
// any conforming compiler the definitions are plain (not `inline`), as C++ requires of a function
// declared in several units. GCC and clang keep them `inline`, made to be emitted by [[gnu::used]]
// (their documented extension): the compiled unit is position-independent, and there a plain
// external function may be interposed, so GCC does not inline it into its callers — the simulator
// ran 8-15 % slower with plain definitions (ITP-04 easy + conservative: 1.38 s user inline, 1.44-1.50
// plain, with -fno-semantic-interposition and a larger inlining budget too; 2026-12-05).
// GPUSCHED_PLAIN_DEFINITIONS (CMake option of that name) asks for the plain form on GCC and clang as
// well: CI's sanitized clang build uses it, so the conforming form is built and tested every run.
#pragma once

#if defined(GPUSCHED_SEPARATE_COMPILATION)
#if defined(__GNUC__) && !defined(GPUSCHED_PLAIN_DEFINITIONS)
#define GPUSCHED_DECL [[gnu::used]] inline
#else
#define GPUSCHED_DECL
#endif
#define GPUSCHED_CTOR_DECL
#define GPUSCHED_HEADER_ONLY 0
#else
#define GPUSCHED_DECL inline
#define GPUSCHED_CTOR_DECL inline
#define GPUSCHED_HEADER_ONLY 1
#endif
