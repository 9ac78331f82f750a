# The Debian package: cpack -G DEB in the build folder (scripts/package_check.sh builds and checks
# it). Included from CMakeLists.txt after the install rules.
set(CPACK_PACKAGE_NAME "ddft")
set(CPACK_PACKAGE_VENDOR "ddft")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "One-way file transfer across a data diode")
# The extended description: lines of at most 80 columns (Debian policy 5.6.13), wrapped here.
set(CPACK_PACKAGE_DESCRIPTION
    "dd_file_send pushes files and folders as datagrams into a data diode (UDP on
a plain NIC or the diode card's device node); the dd_file_receive daemon writes
them to disk, verified, whole under their final names, or records why a file
could not be completed. Forward error correction, repeats, a pre-shared key
(AES-256-GCM) and a hot folder. Keeps the send script (owlDftsSend) and the
receive log format of Owl's DFTS. Includes hardened systemd units for the
receiver and a hot-folder sender, logrotate rules, Prometheus alert rules and a
Grafana dashboard, dd_reconcile (what became of each file sent), the disk
self-test dd_iotest and the link simulator dd_linksim.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Maintainer field (DDFT_PACKAGE_MAINTAINER, CMakeLists.txt): a name and an address. The
# default's .invalid never resolves: a site that packages ddft for its own repository configures
# with -DDDFT_PACKAGE_MAINTAINER="Its name <its address>".
set(CPACK_PACKAGE_CONTACT "${DDFT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Runtime libraries are found by dpkg-shlibdeps from the binaries themselves; the rest is what
# the maintainer scripts run (the system user: adduser; deb-systemd-helper and
# deb-systemd-invoke come from init-system-helpers, which is essential). dd_reconcile needs
# python3 and the rotation needs logrotate, neither of which the transfer itself needs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, logrotate")
# The binaries' debug information stays in the build folder: the package is 10 times smaller.
set(CPACK_STRIP_FILES ON)
# Maintainer scripts (the service user and folders; stop on removal; purge the logs) and the
# conffiles list; strict permissions: the scripts 0755, the lists 0644.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/packaging/deb/postinst;${PROJECT_SOURCE_DIR}/packaging/deb/prerm;${PROJECT_SOURCE_DIR}/packaging/deb/postrm;${PROJECT_SOURCE_DIR}/packaging/deb/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_GENERATOR "DEB")
include(CPack)
