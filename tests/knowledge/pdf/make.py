"""Write the PDF fixtures of this folder (see README.md)."""
import datetime

from fpdf import FPDF

WHEN = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)

pdf = FPDF()
pdf.set_title("Lumen Ledger night jobs")
pdf.set_creation_date(WHEN)
pdf.add_page()
pdf.set_font("Helvetica", "B", 16)
pdf.cell(0, 10, "Recurring invoices", new_x="LMARGIN", new_y="NEXT")
pdf.set_font("Helvetica", size=11)
pdf.multi_cell(0, 6, "Lumen Ledger creates recurring invoices every night. Recurring invoices are generated at 02:00 in the company's time zone, and a failed run is retried at 02:30.")
pdf.add_page()
pdf.set_font("Helvetica", "B", 16)
pdf.cell(0, 10, "Backups", new_x="LMARGIN", new_y="NEXT")
pdf.set_font("Helvetica", size=11)
pdf.multi_cell(0, 6, "The ledger is backed up every Sunday at 04:30 and a backup is kept for 90 days.")
pdf.output("night-jobs.pdf")

scan = FPDF()
scan.set_creation_date(WHEN)
scan.add_page()
scan.set_fill_color(200, 200, 200)
scan.rect(20, 20, 100, 60, style="F")
scan.output("no-text.pdf")
