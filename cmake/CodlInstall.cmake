# Every install() rule of CoDL, in one place. `cmake --install build --prefix P` produces:
#   P/bin/                   codl-controller codl-agent codlctl codl-inject codl-victim
#                            codl-slurm-agents.sh
#   P/lib/systemd/system/    codl-controller.service codl-agent.service
#   P/share/codl/config/     agent.yaml controller.yaml (commented examples for /etc/codl)
#   P/share/doc/codl/        README.md and docs/*.md
# deploy/docker/Dockerfile installs with P=/usr/local; the units name /usr/local/bin and
# /etc/codl, so another prefix needs their ExecStart= edited (docs/deploy.md).
# The agent finds codl-inject beside itself, so every binary goes to the same bin/.
include(GNUInstallDirs)

set(codl_binaries codl-inject codl-victim)  # the tools-only build has just these two
if(NOT CODL_TOOLS_ONLY)
  list(APPEND codl_binaries codl-controller codl-agent codlctl)
endif()
foreach(t IN LISTS codl_binaries)
  if(NOT TARGET ${t})
    message(FATAL_ERROR "CodlInstall: target ${t} is gone; update cmake/CodlInstall.cmake")
  endif()
endforeach()
install(TARGETS ${codl_binaries} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

if(NOT CODL_TOOLS_ONLY)
  install(PROGRAMS deploy/slurm/codl-slurm-agents.sh DESTINATION ${CMAKE_INSTALL_BINDIR})
  # Relative, so --prefix moves it; systemd also reads /usr/local/lib/systemd/system.
  install(DIRECTORY deploy/systemd/ DESTINATION lib/systemd/system
          FILES_MATCHING PATTERN "*.service")
  install(DIRECTORY deploy/config/ DESTINATION ${CMAKE_INSTALL_DATADIR}/codl/config
          FILES_MATCHING PATTERN "*.yaml")
endif()
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")

# The Python package (python/codl: codl.run, the explicit API, codl.results) goes to
# P/share/codl/python, where the agent finds it (../share/codl/python beside its bin/) and puts
# it first on a victim's PYTHONPATH. A build tree has no such folder: the agent reads the
# checkout's python/ from bin/codl-python-path, written here at configure time (docs/victim.md).
install(DIRECTORY python/codl DESTINATION ${CMAKE_INSTALL_DATADIR}/codl/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(WRITE ${CMAKE_BINARY_DIR}/bin/codl-python-path "${CMAKE_SOURCE_DIR}/python\n")
