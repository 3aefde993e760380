"""The console's pages, a module for each family: its handlers (tool calls made as the
signed-in person, then the page) and the HTML its tools' results are shown in."""
