"""The certificate (report.json/html/md, junit.xml, the matrix) and the wire logs in it."""
