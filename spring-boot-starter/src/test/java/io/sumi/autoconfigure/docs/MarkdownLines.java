package io.sumi.autoconfigure.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The lines of a Markdown text that are not inside a fenced code block ({@code ```} or {@code ~~~}). */
final class MarkdownLines {

    private static final Pattern FENCE = Pattern.compile("^ {0,3}(`{3,}|~{3,})");

    private MarkdownLines() {}

    /** The text's lines outside fences; lines inside one are returned empty, so indexes stay line numbers - 1. */
    static List<String> outsideFences(String markdown) {
        List<String> lines = new ArrayList<>();
        String fence = null;
        for (String line : markdown.split("\n", -1)) {
            Matcher opening = FENCE.matcher(line);
            if (fence == null && opening.find()) {
                fence = opening.group(1);
                lines.add("");
            } else if (fence != null) {
                String closing = line.trim();
                char marker = fence.charAt(0);
                if (closing.length() >= fence.length() && closing.chars().allMatch(c -> c == marker)) {
                    fence = null;
                }
                lines.add("");
            } else {
                lines.add(line);
            }
        }
        return lines;
    }
}
