// The trainium target's availability outside kevo's NKI model: `kevo
// targets` and make_target say what this machine has of a Trainium host (the
// Neuron SDK's nki, a device, neuron-explorer) and what is missing. The
// Neuron packages on PyPI are placeholders that raise ImportError; both
// kinds of nki are stood in for here by a package on PYTHONPATH.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "support/test_support.h"
#include "targets/target.h"
#include "targets/trainium/availability.h"

namespace kevo {
namespace {

// Outside kevo's NKI model (KEVO_NKI_MODEL unset), with `dir` on PYTHONPATH.
class ScopedPythonPath {
 public:
  explicit ScopedPythonPath(const std::filesystem::path& dir) {
    if (const char* m = std::getenv("KEVO_NKI_MODEL")) model_ = m, had_model_ = true;
    unsetenv("KEVO_NKI_MODEL");
    if (const char* p = std::getenv("PYTHONPATH")) old_ = p, had_ = true;
    setenv("PYTHONPATH", dir.c_str(), 1);
  }
  ~ScopedPythonPath() {
    if (had_model_) setenv("KEVO_NKI_MODEL", model_.c_str(), 1);
    if (had_)
      setenv("PYTHONPATH", old_.c_str(), 1);
    else
      unsetenv("PYTHONPATH");
  }

 private:
  std::string old_, model_;
  bool had_ = false, had_model_ = false;
};

void write_nki(const std::filesystem::path& dir, const std::string& init) {
  std::filesystem::create_directories(dir / "nki");
  std::ofstream(dir / "nki" / "__init__.py") << init;
}

TEST(TrainiumAvailability, APlaceholderNkiIsNoNeuronSdk) {
  const auto dir = test::temp_dir("trainium-placeholder");
  write_nki(dir, "raise ImportError('nki is not on PyPI: install it from the Neuron repository')\n");
  ScopedPythonPath path(dir);
  const NeuronAvailability a = probe_neuron();
  EXPECT_TRUE(a.nki.empty());
  EXPECT_NE(a.nki_error.find("ImportError: nki is not on PyPI"), std::string::npos) << a.nki_error;
  const std::string why = trainium_unavailable_reason();
  EXPECT_NE(why.find("KEVO_NKI_MODEL=1"), std::string::npos) << why;
  EXPECT_NE(why.find("KEVO_NEURON_PYTHON"), std::string::npos) << why;
  EXPECT_NE(why.find("no Neuron SDK"), std::string::npos) << why;
  try {
    make_target("trainium");
    ADD_FAILURE() << "the trainium target was made";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("target 'trainium' cannot be used: no Neuron SDK"), std::string::npos)
        << e.what();
  }
}

TEST(TrainiumAvailability, KevosOwnModelIsNoNeuronSdk) {
  const auto dir = test::temp_dir("trainium-model-as-sdk");
  write_nki(dir, "__version__ = '0.4-model'\nMODEL = True\n");
  ScopedPythonPath path(dir);
  const NeuronAvailability& a = probe_neuron();
  EXPECT_TRUE(a.nki.empty());
  EXPECT_NE(a.nki_error.find("kevo's NumPy model"), std::string::npos) << a.nki_error;
  EXPECT_NE(trainium_unavailable_reason().find("no Neuron SDK"), std::string::npos);
}

TEST(TrainiumAvailability, AnUnknownCompileTargetIsNamed) {
  const auto dir = test::temp_dir("trainium-bad-platform");
  write_nki(dir, "__version__ = '0.4.0'\n");
  ScopedPythonPath path(dir);
  setenv("KEVO_NEURON_TARGET", "trn9", 1);
  const std::string why = trainium_unavailable_reason();
  unsetenv("KEVO_NEURON_TARGET");
  EXPECT_NE(why.find("KEVO_NEURON_TARGET is 'trn9'"), std::string::npos) << why;
  EXPECT_NE(why.find("trn1, trn2 or trn3"), std::string::npos) << why;
}

// A Neuron environment has NumPy; the system's Python stands in for it
// (make test's setup installs python3-numpy).
bool system_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

TEST(TrainiumAvailability, AnImportableNkiIsNamedWithItsVersion) {
  if (!system_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no NumPy (scripts/setup.sh test-trainium installs it)";
  const auto dir = test::temp_dir("trainium-sdk");
  write_nki(dir, "__version__ = '0.4.0'\n");
  ScopedPythonPath path(dir);
  setenv("KEVO_NEURON_PYTHON", "/usr/bin/python3", 1);
  struct Unset {
    ~Unset() { unsetenv("KEVO_NEURON_PYTHON"); }
  } unset;
  const NeuronAvailability a = probe_neuron();
  EXPECT_EQ(a.nki, "0.4.0") << a.nki_error;
  EXPECT_EQ(trainium_unavailable_reason(), "");
}

}  // namespace
}  // namespace kevo
