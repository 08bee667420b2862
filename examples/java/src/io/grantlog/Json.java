package io.grantlog;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON the client needs: objects, arrays, strings, numbers, booleans, null. {@link #read}
 * throws {@link IllegalArgumentException} (with the position) for any text that is not JSON,
 * an HTML error page of a proxy included, never another exception.
 */
final class Json {
    private final String s;
    private int i;

    private Json(String s) { this.s = s; }

    static Object read(String text) {
        Json j = new Json(text);
        j.ws();
        Object v = j.value();
        j.ws();
        if (j.i != j.s.length()) throw j.bad("trailing text");
        return v;
    }

    private IllegalArgumentException bad(String what) {
        return new IllegalArgumentException("not JSON: " + what + " at " + i);
    }

    private char peek() {
        if (i >= s.length()) throw bad("unexpected end");
        return s.charAt(i);
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) throw bad("unexpected text");
        i += word.length();
        return v;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v) {
        return v instanceof Map ? (Map<String, Object>) v : Map.of();
    }

    @SuppressWarnings("unchecked")
    static List<Object> array(Object v) {
        return v instanceof List ? (List<Object>) v : List.of();
    }

    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(v, b);
        return b.toString();
    }

    private static void write(Object v, StringBuilder b) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String str) {
            b.append('"');
            for (char c : str.toCharArray()) {
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    case '\t' -> b.append("\\t");
                    default -> {
                        if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                        else b.append(c);
                    }
                }
            }
            b.append('"');
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Map<?, ?> m) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) b.append(',');
                first = false;
                write(String.valueOf(e.getKey()), b);
                b.append(':');
                write(e.getValue(), b);
            }
            b.append('}');
        } else if (v instanceof List<?> l) {
            b.append('[');
            for (int k = 0; k < l.size(); k++) {
                if (k > 0) b.append(',');
                write(l.get(k), b);
            }
            b.append(']');
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass());
        }
    }

    private void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
    }

    private Object value() {
        char c = peek();
        switch (c) {
            case '{': {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (peek() == '}') { i++; return m; }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    ws();
                    m.put(k, value());
                    ws();
                    if (peek() == ',') { i++; continue; }
                    expect('}');
                    return m;
                }
            }
            case '[': {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (peek() == ']') { i++; return l; }
                while (true) {
                    ws();
                    l.add(value());
                    ws();
                    if (peek() == ',') { i++; continue; }
                    expect(']');
                    return l;
                }
            }
            case '"':
                return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default: {
                int start = i;
                while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
                String num = s.substring(start, i);
                if (num.isEmpty()) throw bad("unexpected text");
                try {
                    if (num.contains(".") || num.contains("e") || num.contains("E")) {
                        return Double.parseDouble(num);
                    }
                    return Long.parseLong(num);
                } catch (NumberFormatException e) {
                    i = start;
                    throw bad("bad number `" + num + "`");
                }
            }
        }
    }

    private void expect(char c) {
        if (peek() != c) throw bad("expected " + c);
        i++;
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = peek();
            i++;
            if (c == '"') return b.toString();
            if (c != '\\') { b.append(c); continue; }
            char e = peek();
            i++;
            switch (e) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'u' -> {
                    if (i + 4 > s.length()) throw bad("unexpected end");
                    try {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    } catch (NumberFormatException x) {
                        throw bad("bad \\u escape");
                    }
                    i += 4;
                }
                default -> b.append(e);
            }
        }
    }
}
