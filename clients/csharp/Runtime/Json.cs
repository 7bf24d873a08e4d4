// A small JSON reader and writer (RFC 8259), so the library needs nothing
// outside the base class library: Unity's own JsonUtility cannot read
// dictionaries, unions or absent-vs-null, and Newtonsoft.Json would be a
// dependency every game must bring in the right version of.
//
// Values are: null, bool, string, long (an integer literal that fits),
// double (any other number), List<object> and JsonObject (insertion-ordered).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Matchmaking.Client
{
    /// <summary>A JSON object: keys in the order they were read or set.</summary>
    public sealed class JsonObject : Dictionary<string, object>
    {
        readonly List<string> order = new List<string>();

        public JsonObject() : base(StringComparer.Ordinal) { }

        /// <summary>The keys in insertion order.</summary>
        public IList<string> OrderedKeys { get { return order; } }

        public new object this[string key]
        {
            get { object v; return TryGetValue(key, out v) ? v : null; }
            set { if (!ContainsKey(key)) order.Add(key); base[key] = value; }
        }

        public new void Add(string key, object value) { this[key] = value; }

        public new bool Remove(string key)
        {
            if (!base.Remove(key)) return false;
            order.Remove(key);
            return true;
        }

        public override string ToString() { return Json.Serialize(this); }
    }

    /// <summary>Thrown for text that is not JSON.</summary>
    public sealed class JsonParseException : FormatException
    {
        public JsonParseException(string message, int position)
            : base(message + " at offset " + position) { Position = position; }
        public int Position { get; private set; }
    }

    /// <summary>Reads and writes JSON text.</summary>
    public static class Json
    {
        /// <summary>Parses one JSON value (whitespace around it allowed).</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var r = new Reader(text);
            r.SkipWs();
            var value = r.ReadValue(0);
            r.SkipWs();
            if (r.Pos != text.Length) throw new JsonParseException("unexpected text after the value", r.Pos);
            return value;
        }

        /// <summary>Compact JSON text of a value (JsonObject/IDictionary, IList, string, number, bool, null, JsonModel).</summary>
        public static string Serialize(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value);
            return sb.ToString();
        }

        static void Write(StringBuilder sb, object value)
        {
            if (value == null) { sb.Append("null"); return; }
            var model = value as JsonModel;
            if (model != null) { Write(sb, model.Raw); return; }
            var s = value as string;
            if (s != null) { WriteString(sb, s); return; }
            if (value is bool) { sb.Append((bool)value ? "true" : "false"); return; }
            if (value is long || value is int || value is short || value is byte || value is uint || value is ushort || value is sbyte)
            {
                sb.Append(Convert.ToInt64(value, CultureInfo.InvariantCulture).ToString(CultureInfo.InvariantCulture));
                return;
            }
            if (value is ulong) { sb.Append(((ulong)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is double || value is float || value is decimal)
            {
                double d = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or infinity");
                if (d == Math.Floor(d) && Math.Abs(d) < 9007199254740992.0) sb.Append(((long)d).ToString(CultureInfo.InvariantCulture));
                else sb.Append(d.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            var jo = value as JsonObject;
            if (jo != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (var k in jo.OrderedKeys)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, k);
                    sb.Append(':');
                    Write(sb, jo[k]);
                }
                sb.Append('}');
                return;
            }
            var dict = value as System.Collections.IDictionary;
            if (dict != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (System.Collections.DictionaryEntry e in dict)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, Convert.ToString(e.Key, CultureInfo.InvariantCulture));
                    sb.Append(':');
                    Write(sb, e.Value);
                }
                sb.Append('}');
                return;
            }
            var list = value as System.Collections.IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                bool first = true;
                foreach (var item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    Write(sb, item);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("cannot write a " + value.GetType().FullName + " as JSON");
        }

        static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20 || c == '\u2028' || c == '\u2029') sb.Append("\\u").Append(((int)c).ToString("x4"));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        sealed class Reader
        {
            readonly string s;
            public int Pos;
            const int MaxDepth = 128;

            public Reader(string text) { s = text; }

            public void SkipWs()
            {
                while (Pos < s.Length && (s[Pos] == ' ' || s[Pos] == '\t' || s[Pos] == '\n' || s[Pos] == '\r')) Pos++;
            }

            JsonParseException Error(string what) { return new JsonParseException(what, Pos); }

            public object ReadValue(int depth)
            {
                if (depth > MaxDepth) throw Error("nested too deeply");
                if (Pos >= s.Length) throw Error("unexpected end");
                char c = s[Pos];
                switch (c)
                {
                    case '{': return ReadObject(depth);
                    case '[': return ReadArray(depth);
                    case '"': return ReadString();
                    case 't': Expect("true"); return true;
                    case 'f': Expect("false"); return false;
                    case 'n': Expect("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return ReadNumber();
                        throw Error("unexpected character '" + c + "'");
                }
            }

            void Expect(string word)
            {
                if (string.CompareOrdinal(s, Pos, word, 0, word.Length) != 0) throw Error("expected " + word);
                Pos += word.Length;
            }

            JsonObject ReadObject(int depth)
            {
                var o = new JsonObject();
                Pos++;
                SkipWs();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return o; }
                while (true)
                {
                    SkipWs();
                    if (Pos >= s.Length || s[Pos] != '"') throw Error("expected a key");
                    string key = ReadString();
                    SkipWs();
                    if (Pos >= s.Length || s[Pos] != ':') throw Error("expected ':'");
                    Pos++;
                    SkipWs();
                    o[key] = ReadValue(depth + 1);
                    SkipWs();
                    if (Pos >= s.Length) throw Error("unexpected end in an object");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == '}') { Pos++; return o; }
                    throw Error("expected ',' or '}'");
                }
            }

            List<object> ReadArray(int depth)
            {
                var a = new List<object>();
                Pos++;
                SkipWs();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return a; }
                while (true)
                {
                    SkipWs();
                    a.Add(ReadValue(depth + 1));
                    SkipWs();
                    if (Pos >= s.Length) throw Error("unexpected end in an array");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == ']') { Pos++; return a; }
                    throw Error("expected ',' or ']'");
                }
            }

            string ReadString()
            {
                Pos++;
                var sb = new StringBuilder();
                while (true)
                {
                    if (Pos >= s.Length) throw Error("unterminated string");
                    char c = s[Pos++];
                    if (c == '"') return sb.ToString();
                    if (c < 0x20) throw Error("control character in a string");
                    if (c != '\\') { sb.Append(c); continue; }
                    if (Pos >= s.Length) throw Error("unterminated escape");
                    char e = s[Pos++];
                    switch (e)
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (Pos + 4 > s.Length) throw Error("short \\u escape");
                            int code;
                            if (!int.TryParse(s.Substring(Pos, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture, out code))
                                throw Error("bad \\u escape");
                            sb.Append((char)code);
                            Pos += 4;
                            break;
                        default: throw Error("bad escape \\" + e);
                    }
                }
            }

            object ReadNumber()
            {
                int start = Pos;
                if (s[Pos] == '-') Pos++;
                if (Pos >= s.Length || !char.IsDigit(s[Pos])) throw Error("bad number");
                if (s[Pos] == '0') Pos++;
                else while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                bool integer = true;
                if (Pos < s.Length && s[Pos] == '.')
                {
                    integer = false;
                    Pos++;
                    if (Pos >= s.Length || s[Pos] < '0' || s[Pos] > '9') throw Error("bad fraction");
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    integer = false;
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    if (Pos >= s.Length || s[Pos] < '0' || s[Pos] > '9') throw Error("bad exponent");
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                }
                string text = s.Substring(start, Pos - start);
                long l;
                if (integer && long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out l)) return l;
                return double.Parse(text, NumberStyles.Float, CultureInfo.InvariantCulture);
            }
        }
    }
}
