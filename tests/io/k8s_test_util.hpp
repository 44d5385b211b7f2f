// Helpers of the Kubernetes reader tests (tests/io/k8s_*_test.cpp).
#pragma once

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "gpusched/io/k8s.hpp"
#include "test_util.hpp"

namespace k8s_test {

inline std::string k8s_fixture(const std::string& name) { return gpusched::testing::fixture_text("k8s/" + name); }

// Reads texts (each named "<i>.yaml") as one input.
inline gpusched::Result<gpusched::io::k8s::Input> read_texts(const std::vector<std::string>& texts,
                                                            const gpusched::io::k8s::Options& opt = {}) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < texts.size(); ++i) names.push_back(std::to_string(i) + ".yaml");
  std::vector<gpusched::io::k8s::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], names[i]});
  return gpusched::io::k8s::read(sources, opt);
}

inline gpusched::io::k8s::Input read_ok(const std::vector<std::string>& texts, const gpusched::io::k8s::Options& opt = {}) {
  auto r = read_texts(texts, opt);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  return std::move(*r);
}

inline std::string read_error(const std::vector<std::string>& texts, const gpusched::io::k8s::Options& opt = {}) {
  auto r = read_texts(texts, opt);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

inline const gpusched::NodeSpec& node(const gpusched::io::k8s::Input& in, const std::string& name) {
  for (const auto& n : in.cluster.nodes())
    if (n.name == name) return n;
  FAIL("no node " << name);
  return in.cluster.nodes().front();
}

inline const gpusched::Job& job(const gpusched::io::k8s::Input& in, const std::string& name) {
  for (const auto& j : in.jobs)
    if (j.job_name == name) return j;
  FAIL("no job " << name);
  return in.jobs.front();
}

inline bool has_label(const gpusched::NodeSpec& n, const std::string& key) {
  for (const auto& [k, v] : n.labels)
    if (k == key) return true;
  return false;
}

inline bool has_warning(const gpusched::io::k8s::Input& in, const std::string& field_part) {
  for (const auto& w : in.warnings)
    if (w.field.find(field_part) != std::string::npos) return true;
  return false;
}

}  // namespace k8s_test
