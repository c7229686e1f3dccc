# SPDX-License-Identifier: Apache-2.0
# The Debian package: `make -C build package` writes build/specshim_<version>_<arch>.deb,
# <arch> the target's (amd64, or arm64 from the cross build in build-arm64).
#
# The package holds everything that has an install() rule anywhere in the tree
# (the specshim binary, helpers installed to ${SPECSHIM_LIBEXECDIR}, ...) plus
# the non-code files installed here: example config (a conffile), containerd
# snippets, Kubernetes manifests, the node installer, the systemd unit of
# `specshim reconcile` (shipped, not enabled: the package has no maintainer
# scripts), docs, man page, copyright, lintian overrides.
# Paths are fixed by the binary, not by the install prefix: specshim reads
# /etc/specshim/config.toml, and the snippets name /usr/bin/specshim.

set(_pkg "${CMAKE_CURRENT_LIST_DIR}")
set(_pkg_out "${CMAKE_BINARY_DIR}/packaging")
set(_share "${CMAKE_INSTALL_DATADIR}/specshim")
set(_doc "${CMAKE_INSTALL_DATADIR}/doc/specshim")

# Set to the releasing team's address; the default is a placeholder.
set(SPECSHIM_DEB_MAINTAINER "specshim maintainers <maintainers@specshim.invalid>"
    CACHE STRING "Maintainer of the .deb (Maintainer field and changelog trailer)")

# Debian wants the man page and changelog compressed with gzip -9n.
configure_file("${_pkg}/debian/changelog.in" "${_pkg_out}/changelog" @ONLY)
add_custom_command(
  OUTPUT "${_pkg_out}/specshim.1.gz" "${_pkg_out}/specshim-nri.1.gz" "${_pkg_out}/changelog.gz"
  COMMAND gzip -9nc "${_pkg}/debian/specshim.1" > "${_pkg_out}/specshim.1.gz"
  COMMAND gzip -9nc "${_pkg}/debian/specshim-nri.1" > "${_pkg_out}/specshim-nri.1.gz"
  COMMAND gzip -9nc "${_pkg_out}/changelog" > "${_pkg_out}/changelog.gz"
  DEPENDS "${_pkg}/debian/specshim.1" "${_pkg}/debian/specshim-nri.1" "${_pkg_out}/changelog"
  COMMENT "Compressing the man page and changelog")
add_custom_target(specshim_package_docs ALL DEPENDS "${_pkg_out}/specshim.1.gz" "${_pkg_out}/specshim-nri.1.gz"
                  "${_pkg_out}/changelog.gz")

# /etc/specshim/config.toml: staged for packages; never overwrites a config on
# a system installed to with `make install`.
install(CODE "
  # file(INSTALL) adds DESTDIR itself; the existence check has to add it.
  set(_dst \"\$ENV{DESTDIR}/etc/specshim/config.toml\")
  if(EXISTS \"\${_dst}\" AND NOT DEFINED ENV{DESTDIR})
    message(STATUS \"Keeping existing: \${_dst}\")
  else()
    file(INSTALL \"${_pkg}/specshim.toml\" DESTINATION /etc/specshim
         RENAME config.toml PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
")

install(FILES
  "${CMAKE_SOURCE_DIR}/containerd-config/containerd-1.x.toml"
  "${CMAKE_SOURCE_DIR}/containerd-config/containerd-2.x.toml"
  DESTINATION "${_share}/containerd")
install(FILES
  "${_pkg}/kubernetes/runtimeclass.yaml"
  "${_pkg}/kubernetes/daemonset.yaml"
  "${_pkg}/kubernetes/reconcile-daemonset.yaml"
  "${_pkg}/kubernetes/nri-daemonset.yaml"
  DESTINATION "${_share}/kubernetes")
# /usr/lib/systemd/system in the package (relative to the prefix, like the
# rest; systemd also reads /usr/local/lib/systemd/system). Its ExecStart names
# /usr/bin/specshim, as the containerd snippets do.
install(FILES "${_pkg}/systemd/specshim-reconcile.service" "${_pkg}/systemd/specshim-nri.service"
              "${_pkg}/systemd/specshim-nvidia-cdi.service" "${_pkg}/systemd/specshim-nvidia-cdi.path"
        DESTINATION lib/systemd/system)
install(PROGRAMS "${_pkg}/install-on-host.sh" DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/specshim")
install(FILES "${_pkg}/debian/copyright" "${_pkg_out}/changelog.gz" DESTINATION "${_doc}")
file(GLOB _docs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/docs/*.md")
install(FILES ${_docs} DESTINATION "${_doc}")
# Examples for a kind of node, one folder each (an Ascend node's config tables and CDI spec).
install(DIRECTORY "${_pkg}/examples/" DESTINATION "${_doc}/examples")
install(FILES "${_pkg_out}/specshim.1.gz" "${_pkg_out}/specshim-nri.1.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
install(FILES "${_pkg}/debian/specshim.lintian-overrides" DESTINATION "${CMAKE_INSTALL_DATADIR}/lintian/overrides"
        RENAME specshim)

file(WRITE "${_pkg_out}/conffiles" "/etc/specshim/config.toml\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME specshim)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "${SPECSHIM_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OCI runtime shim completing container specs for GPU/NPU nodes")
set(CPACK_PACKAGE_DESCRIPTION [[
specshim is installed as the BinaryName of a containerd runtime handler in
place of runc. On create it reads the bundle's config.json, runs a chain of
spec modifiers to a fixed point and hands the same command line to runc;
every other runc command passes through untouched.

The modifiers give containers a passwd/group entry for their uid, inject CDI
devices, resolve device plugin allocations through the kubelet and add the
device cgroup rules the injected devices need. The package also ships the
containerd handler snippets, a RuntimeClass, an installer DaemonSet, and a
systemd unit (not enabled) that keeps running containers' devices in line
with a desired-state file (specshim reconcile).

specshim-nri runs the same chain as an NRI plugin of containerd 2.x,
without a runtime handler or a containerd restart (a systemd unit and a
DaemonSet, neither enabled by the package).]])
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The target's architecture, not the build machine's (CPack would ask dpkg):
# the cross build (cmake/aarch64-linux-gnu.cmake) writes specshim_<ver>_arm64.deb.
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "${SPECSHIM_DEB_ARCH}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS runc)
set(CPACK_DEBIAN_PACKAGE_ENHANCES containerd)
# postinst: the node's config must load with the new specshim (docs/deploying.md).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${_pkg_out}/conffiles" "${_pkg}/debian/postinst")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
