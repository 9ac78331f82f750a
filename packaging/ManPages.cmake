# Man pages (section 1) for every program and script the package installs in /usr/bin, gzipped
# (-9n: no name or time stamp) into build/man/ and installed to share/man/man1. Included from
# CMakeLists.txt when help2man is found, and not in a fuzzing or cross build, whose programs
# cannot be run here to print their help.
#
# Most are made by help2man from the program's own --help and --version, with the sections --help
# has no room for (exit status, files, examples, see also) from packaging/man/NAME.h2m. The
# Python scripts have no --version: their page carries the project's. dd_file_receive_daemon's
# page is written by hand (packaging/man/dd_file_receive_daemon.1.in): its --help and --version
# are dd_file_receive's, to which it passes every argument.
set(DDFT_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(DDFT_MAN_PAGES)

# ddft_help2man(NAME SUMMARY PROGRAM [VERSION V] [ENV VAR=VALUE...] [DEPENDS FILE|TARGET...]):
# NAME.1.gz from PROGRAM's --help; SUMMARY is the page's NAME line; VERSION stands for a
# --version the program lacks; ENV is set while it runs.
function(ddft_help2man name summary program)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "VERSION" "ENV;DEPENDS")
  set(page ${DDFT_MAN_DIR}/${name}.1)
  set(include ${PROJECT_SOURCE_DIR}/packaging/man/${name}.h2m)
  set(version_option)
  if(arg_VERSION)
    set(version_option --version-string=${arg_VERSION})
  endif()
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${DDFT_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -E env ${arg_ENV}
            ${DDFT_HELP2MAN} --no-info --no-discard-stderr --section=1 --name=${summary}
            --include=${include} ${version_option} --output=${page} ${program}
    COMMAND gzip -9nf ${page}
    DEPENDS ${include} ${arg_DEPENDS}
    COMMENT "Man page ${name}.1 (help2man)"
    VERBATIM)
  set(DDFT_MAN_PAGES ${DDFT_MAN_PAGES} ${page}.gz PARENT_SCOPE)
endfunction()

# The programs: the NAME line of each is the summary its --help starts with.
ddft_help2man(dd_file_send "send files one way across a data diode"
              $<TARGET_FILE:dd_file_send> DEPENDS dd_file_send)
ddft_help2man(dd_file_receive "receive files sent one way across a data diode"
              $<TARGET_FILE:dd_file_receive> DEPENDS dd_file_receive)
ddft_help2man(dd_iotest "disk IO self-test for the sender's reads and the receiver's writes"
              $<TARGET_FILE:dd_iotest> DEPENDS dd_iotest)
ddft_help2man(dd_linksim "a UDP relay that misbehaves like a lossy one-way link"
              $<TARGET_FILE:dd_linksim> DEPENDS dd_linksim)
# The scripts, from the source tree (what the package installs). owlDftsSend prints the version
# of the dd_file_send it runs: this build's; no site settings file is read.
set(ddft_scripts ${PROJECT_SOURCE_DIR}/scripts)
ddft_help2man(owlDftsSend "the DFTS send script: dd_file_send with DFTS's settings"
              ${ddft_scripts}/owlDftsSend
              ENV DD_FILE_SEND=$<TARGET_FILE:dd_file_send> OWL_DFTS_CONF=/nonexistent
              DEPENDS ${ddft_scripts}/owlDftsSend dd_file_send)
file(GLOB ddft_reconcile_modules CONFIGURE_DEPENDS ${ddft_scripts}/ddft_reconcile/*.py)
ddft_help2man(dd_reconcile "what became of each file sent, from the receive logs"
              ${ddft_scripts}/dd_reconcile VERSION ${PROJECT_VERSION}
              DEPENDS ${ddft_scripts}/dd_reconcile ${ddft_reconcile_modules})
ddft_help2man(dd_resend_request "ask again for every file the receiver could not complete"
              ${ddft_scripts}/dd_resend_request VERSION ${PROJECT_VERSION}
              DEPENDS ${ddft_scripts}/dd_resend_request)

# dd_file_receive_daemon: the hand-written page, with this version and the month of the build
# (SOURCE_DATE_EPOCH's when set), as help2man dates its pages.
string(TIMESTAMP DDFT_MAN_DATE "%B %Y" UTC)
configure_file(${PROJECT_SOURCE_DIR}/packaging/man/dd_file_receive_daemon.1.in
               ${PROJECT_BINARY_DIR}/packaging/dd_file_receive_daemon.1 @ONLY)
add_custom_command(
  OUTPUT ${DDFT_MAN_DIR}/dd_file_receive_daemon.1.gz
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_BINARY_DIR}/packaging/dd_file_receive_daemon.1
          ${DDFT_MAN_DIR}/dd_file_receive_daemon.1
  COMMAND gzip -9nf ${DDFT_MAN_DIR}/dd_file_receive_daemon.1
  DEPENDS ${PROJECT_BINARY_DIR}/packaging/dd_file_receive_daemon.1
  COMMENT "Man page dd_file_receive_daemon.1"
  VERBATIM)
list(APPEND DDFT_MAN_PAGES ${DDFT_MAN_DIR}/dd_file_receive_daemon.1.gz)

add_custom_target(man_pages ALL DEPENDS ${DDFT_MAN_PAGES})
install(FILES ${DDFT_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
