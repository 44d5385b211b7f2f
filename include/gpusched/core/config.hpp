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
// In that mode the definitions stay `inline`, made to be emitted by [[gnu::used]]: the other units see
// plain declarations and link to them, while the compiler still inlines within the compiled unit as it
// does header-only (GCC allows a function declared `inline` 200 instructions at -O3, any other 30;
// without the keyword the simulator ran 15 % slower, its cluster-state updates no longer inlined).
// Constructors and destructors are GPUSCHED_CTOR_DECL instead, plain definitions in that mode: for a
// used inline constructor clang emits only the base-object variant, not the complete-object one
// other units call.
#pragma once

#if defined(GPUSCHED_SEPARATE_COMPILATION)
#define GPUSCHED_DECL [[gnu::used]] inline
#define GPUSCHED_CTOR_DECL
#define GPUSCHED_HEADER_ONLY 0
#else
#define GPUSCHED_DECL inline
#define GPUSCHED_CTOR_DECL inline
#define GPUSCHED_HEADER_ONLY 1
#endif
