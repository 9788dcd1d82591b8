#pragma once
// Everything of fairpool's Boost.Asio API: pool, handle, lease, options, hooks, errors,
// statistics, the Prometheus text and the version.
#include "fairpool/asio/close_report.hpp"     // IWYU pragma: export
#include "fairpool/asio/diagnostics.hpp"      // IWYU pragma: export
#include "fairpool/asio/error.hpp"            // IWYU pragma: export
#include "fairpool/asio/handle_observer.hpp"  // IWYU pragma: export
#include "fairpool/asio/handle_stats.hpp"     // IWYU pragma: export
#include "fairpool/asio/hooks.hpp"            // IWYU pragma: export
#include "fairpool/asio/lease.hpp"            // IWYU pragma: export
#include "fairpool/asio/options.hpp"          // IWYU pragma: export
#include "fairpool/asio/pool.hpp"             // IWYU pragma: export
#include "fairpool/asio/pool_stats.hpp"       // IWYU pragma: export
#include "fairpool/asio/prometheus.hpp"       // IWYU pragma: export
#include "fairpool/asio/recorder_options.hpp" // IWYU pragma: export
#include "fairpool/version.hpp"               // IWYU pragma: export
