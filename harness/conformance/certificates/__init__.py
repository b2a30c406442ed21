"""The certificate's documents (report.json/html/md, junit.xml, the matrix), the wire logs."""
