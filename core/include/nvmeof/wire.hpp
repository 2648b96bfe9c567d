// Everything of the NVMe-oF wire layer (RDMA and TCP).
#pragma once

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/auth.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/common.hpp"
#include "nvmeof/wire/discovery.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/protection.hpp"
#include "nvmeof/wire/rdma_cm.hpp"
#include "nvmeof/wire/registers.hpp"
#include "nvmeof/wire/sgl.hpp"
#include "nvmeof/wire/status.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "nvmeof/wire/zns.hpp"
