"""Conformance: certify a target (`wsmode certify`), judge recorded traffic (`wsmode check`),
certify a client (`wsmode certify-client`). One wing per concept, the CLI at the root:

commands       the CLI of the area: certify, check, certify-client, the maintainers' tools
model/         the pure verdict model: cases and their catalog, rules, verdicts, -k selection
targets/       what a target declares (profiles), the run's targets planned, the embedded one
runner/        the certify runner: the run prepared once, the pytest plugin, each case run with
               its context and recorded connections, the console
judges/        the judges a case calls beside the stream rules (FIFO, cache twin, carried
               context, response members, the SDK's second opinion)
certificates/  the certificate's documents (report.json/html/md, junit.xml, the matrix) and
               the wire logs in them
check/         `wsmode check`: recorded traffic read and judged offline
clients/       `wsmode certify-client`: scripted servers, adapters, client verdicts
killmatrix     a maintainers' tool beside them: the suites against every opt-in server fault
"""
